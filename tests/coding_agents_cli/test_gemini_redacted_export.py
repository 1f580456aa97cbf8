"""Spans whose OTLP settings Gemini CLI removes from the hooks' environment.

Under Gemini CLI 0.61's GitHub Actions redaction (``GITHUB_SHA`` set) a hook keeps hardly any
variable: ``OTEL_EXPORTER_OTLP_ENDPOINT`` and ``OTEL_EXPORTER_OTLP_HEADERS`` set only in the
environment never reached the bridge, and its spans never reached the collector (here serve),
while ``otelhooks gemini install``, run in that very environment, said nothing. Install now names
them on stderr and says to put them in ``otelhooks.env`` beside the hooks file, which the bridge
reads (the values cannot be read around Gemini's redaction without undoing it); set there, the
spans arrive.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.coding_agents_cli._runs import (
    CLI_TEST_S,
    GEMINI,
    REPO,
    SERVE_TOKEN,
    SERVE_URL,
    need_cli,
    run_gemini,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)

OTLP = {
    "OTEL_EXPORTER_OTLP_ENDPOINT": SERVE_URL,
    "OTEL_EXPORTER_OTLP_HEADERS": f"authorization=Bearer {SERVE_TOKEN}",
}
STRICT = {"GITHUB_SHA": "0" * 40}  # as under GitHub Actions: Gemini's strict redaction
# the tests' PYTHONPATH (this checkout's otelhooks) is all that passes
SECURITY = {
    "folderTrust": {"enabled": False},
    "auth": {"selectedType": "gemini-api-key"},
    "environmentVariableRedaction": {"allowed": ["PYTHONPATH"]},
}


def _install(
    project: Path, home: Path, extra: dict[str, str], *args: str
) -> subprocess.CompletedProcess[str]:
    """``otelhooks gemini install`` (or ``args``) in the environment Gemini CLI then runs in."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OTEL", "GITHUB", "GEMINI"))}
    env |= {"PYTHONPATH": str(REPO), "HOME": str(home), **extra}
    argv = args or ("gemini", "install", "--hooks", "hooks.yaml")
    return subprocess.run(
        [sys.executable, "-m", "otelhooks", *argv],
        cwd=project,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def _services(path: Path) -> set[Any]:
    found = set()
    for line in path.read_text().splitlines() if path.exists() else ():
        for rs in json.loads(line).get("resourceSpans") or ():
            attrs = (rs.get("resource") or {}).get("attributes") or ()
            found |= {kv["value"].get("stringValue") for kv in attrs if kv["key"] == "service.name"}
    return found


@pytest.mark.parametrize("in_file", [False, True], ids=["environment-only", "export-file"])
def test_otlp_settings_gemini_removes_are_named_at_install_and_work_from_the_file(
    project: Path, tmp_path: Path, in_file: bool
) -> None:
    need_cli(GEMINI)
    home = tmp_path / "home"
    home.mkdir()
    (project / "hooks.yaml").write_text("hooks: []\n")
    if in_file:
        export = project / "otelhooks.env"
        export.write_text("".join(f"{k}={v}\n" for k, v in OTLP.items()))
        export.chmod(0o600)
    installed = _install(project, home, {**OTLP, **STRICT})
    assert installed.returncode == 0, installed.stderr
    said = (
        "warning: Gemini CLI removes OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_HEADERS "
        "from the hooks' environment (GITHUB_SHA is set"
    )
    assert (said in installed.stderr) is not in_file, installed.stderr
    if not in_file:
        assert f"put them in {project / 'otelhooks.env'}" in installed.stderr
    served = tmp_path / "served.jsonl"
    run = run_gemini(
        project,
        home,
        [("call_hi", "echo hi")],
        extra_env={
            "OTELHOOKS_BRIDGE_STATE": str(tmp_path / "state.sqlite3"),
            "OTELHOOKS_BRIDGE_DAEMON_IDLE": "3",
            **OTLP,
            **STRICT,
        },
        settings={"security": SECURITY},
        serve_traces=served,
    )
    assert run.returncode == 0, skip_reason(run)
    # the bridge's spans (the only ones: Gemini's telemetry is off) reach serve only from the
    # export file: Gemini removed the variables
    assert bool(_services(served)) is in_file, _services(served)


def test_install_says_nothing_without_redaction(project: Path, tmp_path: Path) -> None:
    (project / "hooks.yaml").write_text("hooks: []\n")
    installed = _install(project, tmp_path, OTLP)
    assert installed.returncode == 0, installed.stderr
    assert "Gemini CLI removes" not in installed.stderr + installed.stdout


def test_install_names_an_approval_token_gemini_removes_by_its_name(
    project: Path, tmp_path: Path
) -> None:
    """Gemini's ordinary redaction (enabled in its settings) removes a ``*TOKEN*`` name: an
    approval's ``token_env`` set only in the environment is named."""
    (project / "hooks.yaml").write_text(
        "hooks:\n  - id: ask\n    type: PreToolUse\n    matcher: '@shell'\n    approval:\n"
        f"      timeout: 3\n      default: deny\n      url: {SERVE_URL}\n"
        "      token_env: SERVE_BEARER_TOKEN\n"
    )
    (tmp_path / ".gemini").mkdir()
    redaction = {"security": {"environmentVariableRedaction": {"enabled": True}}}
    (tmp_path / ".gemini" / "settings.json").write_text(json.dumps(redaction))
    env = {"SERVE_BEARER_TOKEN": SERVE_TOKEN, "OTEL_SERVICE_NAME": "kept"}
    installed = _install(project, tmp_path, env)
    assert installed.returncode == 0, installed.stderr
    assert "warning: Gemini CLI removes SERVE_BEARER_TOKEN from" in installed.stderr
    assert "security.environmentVariableRedaction is enabled" in installed.stderr
    hooks_test = ("hooks", "test", "hooks.yaml", "--dialect", "gemini", "--event", "BeforeAgent")
    tested = _install(project, tmp_path, env, *hooks_test)
    assert tested.returncode == 1, tested.stdout + tested.stderr
    assert "warning: Gemini CLI removes SERVE_BEARER_TOKEN from" in tested.stderr
