"""The export file (``otelhooks.env``) is read by two parsers: the bridge's, and the hook
client's standard-library twin (the client runs with ``python -I -S``, so it cannot import the
bridge's). They must agree on every ``OTELHOOKS_*`` setting, or an approval's serve URL or token
that Gemini CLI removed from the hook's environment reaches the client as one value and the
bridge as another."""

from __future__ import annotations

from pathlib import Path

from otelhooks.integrations.claude_code import hook_client
from otelhooks.integrations.coding_agents._environment import read_export_file

EXPORT_FILE = """\
# a comment: OTELHOOKS_APPROVALS_URL=http://127.0.0.1:1/never
OTELHOOKS_APPROVALS_URL=http://127.0.0.1:4319
export OTELHOOKS_INGEST_TOKEN="s3cret value"
  OTELHOOKS_ADMIN_TOKEN = 'quoted'\t
OTELHOOKS_EMPTY=
OTELHOOKS_APPROVALS_URL=http://127.0.0.1:9/second-wins-not
OTEL_EXPORTER_OTLP_ENDPOINT=http://127.0.0.1:4318
"""


def test_the_hook_client_reads_the_export_file_as_the_bridge_does(tmp_path: Path) -> None:
    (tmp_path / "otelhooks.env").write_text(EXPORT_FILE)
    (tmp_path / "hooks.yaml").write_text("hooks: []\n")
    bridge = {
        key: value
        for key, value in read_export_file(tmp_path / "otelhooks.env").items()
        if key.startswith("OTELHOOKS_")
    }
    client = hook_client._export_file_settings(["--hooks", str(tmp_path / "hooks.yaml")])
    assert client == bridge
    assert client["OTELHOOKS_APPROVALS_URL"] == "http://127.0.0.1:4319"
    assert client["OTELHOOKS_INGEST_TOKEN"] == "s3cret value"


def test_a_byte_order_mark_is_read_alike(tmp_path: Path) -> None:
    """A file saved by a Windows editor (UTF-8 with a byte order mark): both read its first
    setting (before, the bridge refused the file and the client skipped that setting)."""
    (tmp_path / "otelhooks.env").write_bytes(("\ufeff" + EXPORT_FILE.split("\n", 1)[1]).encode())
    (tmp_path / "hooks.yaml").write_text("hooks: []\n")
    bridge = {
        key: value
        for key, value in read_export_file(tmp_path / "otelhooks.env").items()
        if key.startswith("OTELHOOKS_")
    }
    client = hook_client._export_file_settings(["--hooks", str(tmp_path / "hooks.yaml")])
    assert client == bridge
    assert client["OTELHOOKS_APPROVALS_URL"] == "http://127.0.0.1:4319"
