"""An ``OTEL_*`` setting the OpenTelemetry SDK cannot read, in the environment of the real Codex
CLI and Gemini CLI (which hand it to their hooks), never turns the installed guard off.

The SDK raises ``ValueError`` for such a span limit (``SpanLimits()``) or exemplar filter
(``MeterProvider``), and every hook process built one: before, each exited 1, and both CLIs
take that for a hook that failed without deciding: the scripted ``rm -r victim`` ran. Now the
variable is logged and read as unset: the guard denies, the folder survives.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from otelhooks.integrations.coding_agents import install_agent
from tests.coding_agents_cli._guarded import RM_GUARD
from tests.coding_agents_cli._runs import (
    CLI_TEST_S,
    CODEX,
    GEMINI,
    codex_config,
    need_cli,
    run_codex,
    run_gemini,
    skip_reason,
)

pytestmark = pytest.mark.timeout(CLI_TEST_S)

RM = [("call_rm", "rm -r victim")]
UNREADABLE = {"OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT": "abc", "OTEL_METRICS_EXEMPLAR_FILTER": "traced"}


@pytest.mark.parametrize("dialect", ["codex", "gemini"])
def test_the_real_cli_guard_denies_under_unreadable_otel_settings(
    project: Path, tmp_path: Path, runtime_dir: Path, dialect: str
) -> None:
    cli = CODEX if dialect == "codex" else GEMINI
    need_cli(cli)
    (project / "hooks.yaml").write_text(RM_GUARD)
    install_agent(dialect, project=project, hooks_file="hooks.yaml")
    home = tmp_path / "home"
    env = {
        "XDG_RUNTIME_DIR": str(runtime_dir),
        "OTELHOOKS_BRIDGE_STATE": str(tmp_path / "state.sqlite3"),
        "OTELHOOKS_BRIDGE_DAEMON_IDLE": "10",
        **UNREADABLE,
    }
    if dialect == "codex":
        codex_config(home, trusted=project)
        run = run_codex(project, home, RM, extra_env=env)
    else:
        run = run_gemini(project, home, RM, extra_env=env)
    assert run.returncode == 0, skip_reason(run)
    assert (project / "victim" / "keep.txt").read_text() == "precious", run.told()
    assert "deleting is not allowed here" in run.told()
