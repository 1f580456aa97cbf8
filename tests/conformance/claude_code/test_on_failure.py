"""``onFailure`` of a Claude Code settings handler, read as Claude Code reads it.

``fixtures/on_failure.json`` names its source (the Claude Code CLI 2.1.337 that
``tests/claude_code_cli/package-lock.json`` pins, whose settings schema and hook runner define
the field) and holds what it says: ``"continue"`` (the default) lets the event go on when the
handler cannot start, times out or exits with a code other than 0 or 2 (a non-blocking error),
any other string is read as ``"block"``, and four events ignore it with a warning. otelhooks
reads it as the hook's ``on_error``.
"""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from otelhooks import ConfigError, load_config
from otelhooks.integrations.claude_code import BridgeOptions, run_hook
from tests.conformance.claude_code._bridge_cli import fixture

ON_FAILURE = fixture("on_failure.json")
FAILING = {
    "exits 1": {"command": "exit 1"},
    "times out": {"command": "sleep 30", "timeout": 1},
    "cannot start": {"command": "/nonexistent/otelhooks-python -I -S hook_client.py"},
}


def _settings(tmp_path: Path, event: str, handler: dict[str, Any]) -> Path:
    path = tmp_path / "settings.json"
    group = {"hooks": [{"type": "command", **handler}]}
    if event == "PreToolUse":
        group["matcher"] = "Bash"
    path.write_text(json.dumps({"hooks": {event: [group]}}))
    return path


def _pre_tool_use(tmp_path: Path, settings: Path) -> dict[str, Any]:
    documented = next(
        i["input"] for i in fixture("hook_inputs.json")["inputs"] if i["event"] == "PreToolUse"
    )
    payload = {**documented, "tool_name": "Bash", "tool_input": {"command": "rm -rf build"}}
    options = BridgeOptions(hooks=(str(settings),), state=str(tmp_path / "state.db"))
    response = run_hook(json.dumps(payload), options, environ={})
    assert response.exit_code == 0, response.stderr
    return json.loads(response.stdout) if response.stdout else {}


def _loaded(settings: Path) -> tuple[str, list[str]]:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        (hook,) = load_config([settings]).hooks
    return hook.on_error, [str(w.message) for w in caught]


@pytest.mark.parametrize("failure", sorted(FAILING))
def test_a_failing_guard_with_on_failure_block_denies(tmp_path: Path, failure: str) -> None:
    settings = _settings(tmp_path, "PreToolUse", {**FAILING[failure], "onFailure": "block"})
    decision = _pre_tool_use(tmp_path, settings)["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny"
    assert "settings:PreToolUse[0].hooks[0] failed" in decision["permissionDecisionReason"]


@pytest.mark.parametrize("on_failure", [None, "continue"])
def test_a_failing_guard_without_it_lets_the_call_go_on_and_says_so(
    tmp_path: Path, on_failure: str | None
) -> None:
    handler = {**FAILING["exits 1"], **({"onFailure": on_failure} if on_failure else {})}
    answer = _pre_tool_use(tmp_path, _settings(tmp_path, "PreToolUse", handler))
    assert "hookSpecificOutput" not in answer
    assert "a hook failed and did not decide" in answer["systemMessage"]


@pytest.mark.parametrize(("value", "read_as"), sorted(ON_FAILURE["read_as"].items()))
def test_each_value_is_read_as_claude_code_reads_it(
    tmp_path: Path, value: str, read_as: str
) -> None:
    settings = _settings(tmp_path, "PreToolUse", {"command": "exit 1", "onFailure": value})
    on_error, found = _loaded(settings)
    assert on_error == read_as
    warned = any(f"onFailure {value!r} is read as 'block'" in w for w in found)
    assert warned == (value not in ("continue", "block"))


@pytest.mark.parametrize("event", ON_FAILURE["ignored_on"])
def test_the_events_claude_code_lets_go_on_ignore_it_with_a_warning(
    tmp_path: Path, event: str
) -> None:
    settings = _settings(tmp_path, event, {"command": "exit 1", "onFailure": "block"})
    on_error, found = _loaded(settings)
    assert on_error == "continue"
    assert any(f"onFailure is ignored on {event}" in w for w in found)


def test_a_value_that_is_not_a_string_is_an_error(tmp_path: Path) -> None:
    settings = _settings(tmp_path, "PreToolUse", {"command": "exit 1", "onFailure": True})
    with pytest.raises(ConfigError, match="onFailure must be a string"):
        load_config([settings])
