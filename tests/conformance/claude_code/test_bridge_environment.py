"""The bridge as Claude Code really runs it: from a subfolder, without ``OTEL_*``, failing closed.

Claude Code runs hook commands in its current folder with ``CLAUDE_PROJECT_DIR`` set and every
``OTEL_*`` variable removed (hooks reference, "Common input fields" and "Hook handler fields",
``fixtures/hook_inputs.json`` names the source). Every case is a real ``otelhooks claude-code``
process; they all run at once, once, and each test checks one of them.
"""

from __future__ import annotations

import json
import stat
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from otelhooks import read_otlp_json_lines
from tests._webhook_server import WebhookServer, webhook_server
from tests.conformance.claude_code._bridge_cli import Run, finish, fixture, hook_env, start

GUARD = """hooks:
  - id: no-rm
    type: PreToolUse
    matcher: Bash
    command: >-
      case "$HOOK_TOOL_INPUT" in *'rm -rf'*)
      echo 'rm -rf is not allowed here' >&2; exit 2;; esac
"""
# the documented guard command of docs/adapters.md, relative paths as written there
RELATIVE = ["--hooks", ".claude/otelhooks.yaml", "--traces-out", ".claude/traces.jsonl"]
SECRET_PROMPT = "my prompt mentions project-zebra"
SECRET_ARG = "rm -rf /srv/project-okapi"


def documented(event: str, **fields: Any) -> str:
    base = next(i["input"] for i in fixture("hook_inputs.json")["inputs"] if i["event"] == event)
    return json.dumps({**base, **fields})


def rm_rf(session: str) -> str:
    return documented(
        "PreToolUse", session_id=session, tool_input={"command": SECRET_ARG}, tool_use_id=session
    )


def project(root: Path, *, env_file: str = "", hooks: str = GUARD) -> Path:
    (root / ".claude").mkdir(parents=True)
    (root / ".claude" / "otelhooks.yaml").write_text(hooks)
    if env_file:
        (root / ".claude" / "otelhooks.env").write_text(env_file)
    (root / "src" / "pkg").mkdir(parents=True)
    return root


@dataclass
class Cases:
    runs: dict[str, Run]
    roots: dict[str, Path]
    home: Path
    server: WebhookServer


@pytest.fixture(scope="module")
def cases(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cases]:
    tmp = tmp_path_factory.mktemp("env")
    with webhook_server() as server:
        export = (
            "# export settings for the bridge (Claude Code passes no OTEL_* to hooks)\n"
            f"OTEL_EXPORTER_OTLP_ENDPOINT={server.url}\n"
            "export OTEL_SERVICE_NAME='my-claude'\n"
            "PATH=/ignored\n"
        )
        roots = {
            "sub": project(tmp / "sub"),
            "export": project(tmp / "export", env_file=export),
            "broken": project(tmp / "broken", hooks="hooks: [{id: x, type: Nope}]\n"),
            "quiet": project(tmp / "quiet"),
            "capture": project(
                tmp / "capture",
                env_file="OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true\n",
            ),
        }
        home = tmp / "home"
        jobs: dict[str, tuple[Path, list[str], str]] = {
            # a guard run from a subfolder of the project, paths as the docs write them
            "sub": (roots["sub"], RELATIVE, rm_rf("sub")),
            "export": (roots["export"], RELATIVE, rm_rf("exp")),
            "broken-default": (roots["broken"], RELATIVE, rm_rf("b1")),
            "broken-closed": (roots["broken"], [*RELATIVE, "--fail-closed"], rm_rf("b2")),
            "broken-closed-exit2": (
                roots["broken"],
                [*RELATIVE, "--fail-closed", "--deny-mode", "exit2"],
                rm_rf("b3"),
            ),
            "broken-closed-stop": (
                roots["broken"],
                [*RELATIVE, "--fail-closed"],
                documented("Stop", session_id="b4"),
            ),
            "garbage-closed": (roots["quiet"], [*RELATIVE, "--fail-closed"], "{not json"),
            "garbage-default": (roots["quiet"], RELATIVE, "{not json"),
            # the state file at its default place (~/.otelhooks), content capture off and on
            "quiet-prompt": (
                roots["quiet"],
                RELATIVE,
                documented("UserPromptSubmit", session_id="q", prompt=SECRET_PROMPT),
            ),
            "quiet-tool": (roots["quiet"], RELATIVE, rm_rf("q")),
            "capture-prompt": (
                roots["capture"],
                [*RELATIVE, "--state", ".claude/state.sqlite3"],
                documented("UserPromptSubmit", session_id="c", prompt=SECRET_PROMPT),
            ),
            "capture-tool": (
                roots["capture"],
                [*RELATIVE, "--state", ".claude/state.sqlite3"],
                rm_rf("c"),
            ),
        }
        # all at once, each from the project's subfolder src/pkg (Claude Code's current folder)
        procs = {
            name: start(args, stdin, cwd=root / "src" / "pkg", env=hook_env(root, home))
            for name, (root, args, stdin) in jobs.items()
        }
        runs = {name: finish(proc) for name, proc in procs.items()}
        yield Cases(runs, roots, home, server)


def deny_reason(run: Run) -> str:
    decision = run.json()["hookSpecificOutput"]
    assert (decision["hookEventName"], decision["permissionDecision"]) == ("PreToolUse", "deny")
    reason: str = decision["permissionDecisionReason"]
    return reason


def test_a_guard_run_from_a_subfolder_finds_its_hooks_through_claude_project_dir(
    cases: Cases,
) -> None:
    run = cases.runs["sub"]
    assert run.code == 0, run.stderr
    assert deny_reason(run) == "rm -rf is not allowed here"
    spans = read_otlp_json_lines(cases.roots["sub"] / ".claude" / "traces.jsonl")
    assert [s["name"] for s in spans] == ["execute_tool Bash"]
    assert not (cases.roots["sub"] / "src" / "pkg" / ".claude").exists()


def test_export_settings_come_from_the_file_next_to_the_hooks(cases: Cases) -> None:
    assert cases.runs["export"].code == 0, cases.runs["export"].stderr  # a denial: a span
    (got,) = cases.server.wait_for("/v1/traces")
    request = ExportTraceServiceRequest.FromString(got.body)
    (resource_spans,) = request.resource_spans
    resource = {a.key: a.value.string_value for a in resource_spans.resource.attributes}
    assert resource["service.name"] == "my-claude"
    names = [s.name for ss in resource_spans.scope_spans for s in ss.spans]
    assert names == ["execute_tool Bash"]


def test_a_broken_hooks_file_is_a_non_blocking_error_by_default(cases: Cases) -> None:
    run = cases.runs["broken-default"]
    assert (run.code, run.stdout) == (1, "")  # Claude Code: shown, and the tool runs
    assert "otelhooks.yaml" in run.stderr


def test_fail_closed_denies_a_tool_call_when_the_hooks_do_not_load(cases: Cases) -> None:
    run = cases.runs["broken-closed"]
    assert run.code == 0
    reason = deny_reason(run)
    assert reason.startswith("otelhooks could not check this tool call (fail-closed)")
    assert "otelhooks.yaml" in reason


def test_fail_closed_in_exit2_mode_blocks_with_exit_code_2(cases: Cases) -> None:
    run = cases.runs["broken-closed-exit2"]
    assert (run.code, run.stdout) == (2, "")
    assert "fail-closed" in run.stderr


def test_fail_closed_does_not_block_other_events(cases: Cases) -> None:
    # exit 2 on Stop would keep Claude working: a broken bridge must not do that
    run = cases.runs["broken-closed-stop"]
    assert (run.code, run.stdout) == (1, "")


def test_fail_closed_denies_input_that_is_not_json(cases: Cases) -> None:
    assert "not JSON" in deny_reason(cases.runs["garbage-closed"])
    default = cases.runs["garbage-default"]
    assert (default.code, default.stdout) == (1, "")


def _state_bytes(path: Path) -> bytes:
    return b"".join(p.read_bytes() for p in path.parent.glob(path.name + "*"))


def test_the_state_file_is_owner_only_in_an_owner_only_folder(cases: Cases) -> None:
    assert cases.runs["quiet-prompt"].code == 0, cases.runs["quiet-prompt"].stderr
    state = cases.home / ".otelhooks" / "claude-code.sqlite3"
    assert stat.S_IMODE(state.stat().st_mode) == 0o600
    assert stat.S_IMODE(state.parent.stat().st_mode) == 0o700
    captured = cases.roots["capture"] / ".claude" / "state.sqlite3"
    assert stat.S_IMODE(captured.stat().st_mode) == 0o600


def test_prompts_and_tool_inputs_stay_out_of_the_state_file_without_content_capture(
    cases: Cases,
) -> None:
    assert cases.runs["quiet-tool"].code == 0
    stored = _state_bytes(cases.home / ".otelhooks" / "claude-code.sqlite3")
    assert b"project-zebra" not in stored
    assert b"project-okapi" not in stored


def test_with_content_capture_the_state_file_keeps_them(cases: Cases) -> None:
    assert cases.runs["capture-tool"].code == 0
    stored = _state_bytes(cases.roots["capture"] / ".claude" / "state.sqlite3")
    assert b"project-zebra" in stored
