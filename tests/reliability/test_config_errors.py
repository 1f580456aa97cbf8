"""Every config error class, from a real file: one problem naming the file (with its line), the
hook and the field, from ``load_config`` and from ``otelhooks validate``; and nothing of the file
is loaded, not even its good hooks.

Each bad file holds a valid hook (``good``) before the bad one, so "nothing is half-loaded" is
tested, not assumed. An invalid *regex* matcher is not in the list on purpose: as in the
workspace engine it logs a warning and falls back to an exact match (``tests/test_matchers.py``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from otelhooks import ConfigError, ConfigErrors, load_config
from otelhooks._config import inspect_config
from otelhooks.testing import run_cli

GOOD = {"id": "good", "type": "afterToolCall", "command": "true"}
URL = "http://127.0.0.1:9/hook"


@dataclass(frozen=True)
class Case:
    name: str  # the file's name: its suffix picks the format
    document: Any
    hook: str
    field: str
    says: str  # a fragment of the problem


def hook_list(bad: dict[str, Any]) -> dict[str, Any]:
    return {"hooks": [GOOD, bad]}


CASES = [
    Case("unknown-event.json", hook_list({"id": "bad", "type": "afterToolCal", "command": "true"}),
         "bad", "type", "Did you mean 'afterToolCall'?"),
    Case("matcher-of-a-wrong-type.json",
         hook_list({"id": "bad", "type": "afterToolCall", "matcher": 5, "command": "true"}),
         "bad", "matcher", "valid string"),
    Case("matcher-on-a-non-tool-event.json",
         hook_list({"id": "bad", "type": "afterStep", "matcher": "fs", "command": "true"}),
         "bad", "matcher", "only on tool events"),
    Case("webhook-without-url.json",
         hook_list({"id": "bad", "type": "afterToolCall", "webhook": {"timeout": 5}}),
         "bad", "webhook.url", "required"),
    Case("ftp-url.json",
         hook_list({"id": "bad", "type": "afterToolCall", "webhook": {"url": "ftp://h.test/x"}}),
         "bad", "webhook.url", "http(s)"),
    Case("file-url.json",
         hook_list({"id": "bad", "type": "afterToolCall", "webhook": {"url": "file:///etc/passwd"}}),
         "bad", "webhook.url", "http(s)"),
    Case("webhook-timeout-zero.json",
         hook_list({"id": "bad", "type": "afterToolCall", "webhook": {"url": URL, "timeout": 0}}),
         "bad", "webhook.timeout", "greater than or equal to 0.001"),
    Case("webhook-timeout-over-600-s.json",
         hook_list({"id": "bad", "type": "afterToolCall", "webhook": {"url": URL, "timeout": 601}}),
         "bad", "webhook.timeout", "600"),
    Case("command-timeout-over-30-s.json",
         hook_list({"id": "bad", "type": "afterToolCall", "command": "true", "timeout": 31}),
         "bad", "timeout", "at most 30 s"),
    Case("workspace-timeout-over-30000-ms.hook.json",
          {"name": "ws", "hooks": {"PreToolUse": [
             {"matcher": "*", "type": "command", "command": "true"},
             {"matcher": "*", "type": "command", "command": "true", "timeout": 60000}]}},
         "workspace-timeout-over-30000-ms:PreToolUse[1]", "timeout", "milliseconds"),
    Case("header-template-outside-allowed-env-vars.json",
         hook_list({"id": "bad", "type": "afterToolCall", "webhook": {
             "url": URL, "headers": {"Authorization": "Bearer ${HOME}"},
             "allowedEnvVars": ["HOOK_TOKEN"]}}),
         "bad", "webhook", "'Authorization' uses ${HOME}, which is not in allowedEnvVars"),
    Case("duplicate-id.json", hook_list({**GOOD, "type": "afterStep"}),
         "good", "id", "duplicate"),
    Case("timeout-of-a-wrong-type.json",
         hook_list({"id": "bad", "type": "afterToolCall", "command": "true", "timeout": "soon"}),
         "bad", "timeout", "valid number"),
    Case("intercept-of-a-wrong-type.json",
         hook_list({"id": "bad", "type": "before_tool_call", "command": "true",
                    "intercept": "maybe"}),
         "bad", "intercept", "valid boolean"),
    Case("headers-of-a-wrong-type.yaml",
         hook_list({"id": "bad", "type": "afterToolCall", "webhook": {"url": URL,
                                                                      "headers": ["a"]}}),
         "bad", "webhook.headers", "valid dictionary"),
    Case("intercept-not-in-the-manifest.json",
         {"name": "app", "capabilities": {"hooks": {"subscribes": ["agent_end"],
                                                    "intercepts": ["message_sending"]}},
          "hooks": [{"id": "good", "type": "agent_end", "command": "true"},
                    {"id": "bad", "type": "before_tool_call", "command": "true"}]},
         "bad", "type", "does not declare"),
]  # fmt: skip


@pytest.fixture(params=CASES, ids=[c.name.split(".")[0] for c in CASES])
def case(request: pytest.FixtureRequest) -> Case:
    case: Case = request.param
    return case


def write(case: Case, folder: Path) -> Path:
    path = folder / case.name
    if path.suffix == ".yaml":
        import yaml

        path.write_text(yaml.safe_dump(case.document, sort_keys=False))
    else:
        path.write_text(json.dumps(case.document, indent=2))
    return path


def test_load_config_raises_one_problem_naming_file_line_hook_and_field(
    case: Case, tmp_path: Path
) -> None:
    path = write(case, tmp_path)
    with pytest.raises(ConfigError) as info:
        load_config([path])
    error = info.value
    assert not isinstance(error, ConfigErrors)  # one problem, not several
    assert (error.file, error.hook_id, error.field) == (str(path), case.hook, case.field)
    assert error.line is not None
    assert str(error).startswith(f"{path}:{error.line}, hook '{case.hook}', field '{case.field}': ")
    assert case.says in str(error)


def test_a_file_with_one_bad_hook_gives_no_hook_at_all(case: Case, tmp_path: Path) -> None:
    path = write(case, tmp_path)
    (source,) = inspect_config([path])
    assert len(source.problems) == 1
    assert source.hooks == ()


def test_one_bad_file_among_good_ones_loads_nothing(case: Case, tmp_path: Path) -> None:
    good = tmp_path / "good" / "hooks.json"
    good.parent.mkdir()
    good.write_text(json.dumps({"hooks": [{**GOOD, "id": "elsewhere"}]}))
    bad = write(case, tmp_path)
    assert load_config([good]).hooks  # the good file alone loads
    with pytest.raises(ConfigError):
        load_config([good, bad])


def test_validate_prints_the_one_problem_and_exits_1(
    case: Case, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = write(case, tmp_path)
    assert run_cli("validate", str(path)) == 1
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith(f"FAIL {path} [")
    assert lines[0].endswith(": 1 problem")
    (problem,) = lines[1:-1]
    assert problem.startswith(f"  {path}:")
    assert f", hook '{case.hook}', field '{case.field}': " in problem
    assert lines[-1] == "1 file, 0 hooks, 1 problem"


def test_a_problem_never_quotes_an_environment_value(tmp_path: Path) -> None:
    (case,) = [c for c in CASES if c.name.startswith("header-template")]
    path = write(case, tmp_path)
    with pytest.raises(ConfigError) as info:
        load_config([path])
    assert str(Path.home()) not in str(info.value)  # ${HOME} is named, never resolved
