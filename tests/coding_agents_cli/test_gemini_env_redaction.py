"""An ``approval:`` guard asking serve, with the real Gemini CLI removing its token.

Gemini CLI 0.61 runs hooks with a sanitized environment (``sanitizeEnvironment`` in its core):
with ``security.environmentVariableRedaction.enabled`` it removes every variable whose name
holds TOKEN, SECRET, KEY, AUTH ..., and under GitHub Actions (``GITHUB_SHA`` set) every variable
but ``PATH``, ``HOME`` and a few others (``GEMINI_CLI_*`` and the setting's ``allowed`` names
pass). ``OTELHOOKS_INGEST_TOKEN`` and ``OTELHOOKS_APPROVALS_URL`` never reached the bridge.

Before, the approval sent a bare ``Bearer`` header and was denied with ``Illegal header value
b'Bearer '``, which named neither the token nor why it was gone, and nothing could make it
reach the hook but listing the token in Gemini's ``allowed``. Now the hook client reads the
``OTELHOOKS_*`` settings of ``otelhooks.env`` beside the hooks file into the hook's environment
(a variable the process has wins), so serve is asked; without it the deny says which token is
missing and where to put it.

An approval whose serve came from ``OTELHOOKS_APPROVALS_URL`` alone lost it the same way and
waited in the hook process's own inbox, which nobody lists: with ``default: allow`` the call ran
at the timeout, nobody ever asked, without a word. Now a hook process (the bridge, one process
or its daemon) blocks such an approval at once, the reason saying there is no serve to ask.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from otelhooks.integrations.coding_agents import install_agent
from tests.coding_agents_cli._runs import (
    CLI_TEST_S,
    GEMINI,
    SERVE_TOKEN,
    SERVE_URL,
    need_cli,
    run_gemini,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)

APPROVAL = f"""\
hooks:
  - id: ask-first
    type: PreToolUse
    matcher: "@shell"
    approval:
      timeout: 3
      default: deny
      url: {SERVE_URL}
"""


OWN = "SERVE_BEARER_TOKEN"  # an approval's token_env of its own (not an OTELHOOKS_* name)

SECURITY = {
    "folderTrust": {"enabled": False},
    "auth": {"selectedType": "gemini-api-key"},
    # the tests' PYTHONPATH (this checkout's otelhooks) is all that passes
    "environmentVariableRedaction": {"allowed": ["PYTHONPATH"]},
}


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        "OTELHOOKS_CLAUDE_STATE": str(tmp_path / "state.sqlite3"),
        "OTELHOOKS_CLAUDE_DAEMON_IDLE": "3",
        "OTELHOOKS_INGEST_TOKEN": SERVE_TOKEN,  # what Gemini CLI removes
        "GITHUB_SHA": "0" * 40,  # as under GitHub Actions: Gemini's strict redaction
    }


@pytest.mark.parametrize("token_in_file", [True, False], ids=["export-file", "environment-only"])
def test_an_approval_reaches_serve_past_geminis_redaction(
    token_in_file: bool, project: Path, tmp_path: Path
) -> None:
    need_cli(GEMINI)
    (project / "hooks.yaml").write_text(APPROVAL)
    if token_in_file:
        export = project / "otelhooks.env"
        export.write_text(f"OTELHOOKS_INGEST_TOKEN={SERVE_TOKEN}\n")
        export.chmod(0o600)
    install_agent("gemini", project=project, hooks_file="hooks.yaml")
    run = run_gemini(
        project,
        tmp_path / "home",
        [("call_rm", "rm -r victim")],
        extra_env=_env(tmp_path),
        settings={"security": SECURITY},
        serve_traces=tmp_path / "t.jsonl",
        approvals=True,
    )
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    if token_in_file:  # serve was asked: nobody answered and its default denied
        assert "not approved (no answer within 3s)" in run.told(), run.told()
    else:
        assert "no token for serve: none of OTELHOOKS_INGEST_TOKEN" in run.told(), run.told()
        assert "otelhooks.env" in run.told()


def test_an_approval_with_no_serve_left_blocks_at_once(project: Path, tmp_path: Path) -> None:
    need_cli(GEMINI)
    hooks = APPROVAL.replace("default: deny", "default: allow").replace(f"url: {SERVE_URL}", "")
    (project / "hooks.yaml").write_text(hooks)
    install_agent("gemini", project=project, hooks_file="hooks.yaml")
    run = run_gemini(
        project,
        tmp_path / "home",
        [("call_rm", "rm -r victim")],
        extra_env={**_env(tmp_path), "OTELHOOKS_APPROVALS_URL": SERVE_URL},
        settings={"security": SECURITY},
        serve_traces=tmp_path / "t.jsonl",
        approvals=True,
    )
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious", run.told()
    assert "cannot ask a person: no serve to ask" in run.told(), run.told()


@pytest.mark.parametrize("token_in_file", [True, False], ids=["export-file", "environment-only"])
def test_an_approval_s_own_token_variable_is_read_from_the_export_file(
    token_in_file: bool, project: Path, tmp_path: Path
) -> None:
    """``token_env: SERVE_BEARER_TOKEN`` (not an ``OTELHOOKS_*`` name): Gemini CLI removes it,
    and before, ``otelhooks.env`` was read for ``OTELHOOKS_*`` names only, so the deny told the
    person to put the token in a file that was then ignored."""
    need_cli(GEMINI)
    hooks = APPROVAL.replace(f"url: {SERVE_URL}", f"url: {SERVE_URL}\n      token_env: {OWN}")
    (project / "hooks.yaml").write_text(hooks)
    if token_in_file:
        export = project / "otelhooks.env"
        export.write_text(f"{OWN}={SERVE_TOKEN}\n")
        export.chmod(0o600)
    install_agent("gemini", project=project, hooks_file="hooks.yaml")
    env = {k: v for k, v in _env(tmp_path).items() if k != "OTELHOOKS_INGEST_TOKEN"}
    run = run_gemini(
        project,
        tmp_path / "home",
        [("call_rm", "rm -r victim")],
        extra_env={**env, OWN: SERVE_TOKEN},  # what Gemini CLI removes
        settings={"security": SECURITY},
        serve_traces=tmp_path / "t.jsonl",
        approvals=True,
    )
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious"
    if token_in_file:  # serve was asked: nobody answered and its default denied
        assert "not approved (no answer within 3s)" in run.told(), run.told()
    else:
        assert f"no token for serve: none of {OWN}, OTELHOOKS_INGEST_TOKEN" in run.told()
        assert f"put {OWN}=... there" in run.told(), run.told()
