"""The four config formats through ``load_config``: each reference system's own shape, errors
that name file, hook, field and line, all-or-nothing loading, and property tests that no input
raises anything but ``ConfigError``."""

from __future__ import annotations

import contextlib
import json
import sys
import tempfile
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from otelhooks import AgentEventsConfig, ConfigError, ConfigErrors, load_config
from otelhooks._actions._command import CommandAction
from otelhooks._config import detect_format, inspect_config
from otelhooks._config._parse import parse_file
from otelhooks.events import StepEvent
from otelhooks.testing import TestPipeline

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"


EVENT = StepEvent(stepIndex=0)  # any event, for calling actions directly


def write(path: Path, text: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(textwrap.dedent(text).lstrip("\n"))
    return path


def problem(paths: list[Path]) -> ConfigError:
    with pytest.raises(ConfigError) as info:
        load_config(paths)
    return info.value


def workspace_file(tmp_path: Path, text: str, name: str = "audit.hook.json") -> Path:
    return write(tmp_path / "ws-1" / "hooks" / name, text)


RULES = """
{
  "name": "audit",
  "description": "test",
  "enabled": true,
  "hooks": {
    "PreToolUse": [
      {"matcher": "Edit|Write", "type": "command", "command": "exit 0", "timeout": 5000},
      {"matcher": "/^mcp__.*/", "type": "command", "command": "true"}
    ],
    "SessionEnd": [
      {"matcher": "*", "type": "command", "command": "echo bye"}
    ]
  }
}
"""


# -- workspace *.hook.json -------------------------------------------------------------------------


def test_workspace_rules_load_with_ids_and_canonical_events(tmp_path: Path) -> None:
    hooks = load_config([workspace_file(tmp_path, RULES)]).hooks
    assert [(h.id, h.event) for h in hooks] == [
        ("audit:PreToolUse[0]", "before_tool_call"),
        ("audit:PreToolUse[1]", "before_tool_call"),
        ("audit:SessionEnd[0]", "session_end"),
    ]


def test_workspace_timeout_is_in_milliseconds_with_a_ten_second_default(tmp_path: Path) -> None:
    hooks = load_config([workspace_file(tmp_path, RULES)]).hooks
    assert [h.timeout for h in hooks] == [5.0, 10.0, 10.0]


def test_workspace_matchers_follow_the_workspace_rules(tmp_path: Path) -> None:
    edit, mcp, _ = load_config([workspace_file(tmp_path, RULES)]).hooks
    assert edit.compiled_matcher.matches(("Write",))
    assert not edit.compiled_matcher.matches(("Edit|Write",))
    assert mcp.compiled_matcher.matches(("mcp__github__create_issue",))


def test_workspace_command_timeout_over_thirty_seconds_is_an_error_on_its_line(
    tmp_path: Path,
) -> None:
    path = workspace_file(tmp_path, RULES.replace('"timeout": 5000', '"timeout": 45000'))
    error = problem([path])
    assert (error.file, error.hook_id, error.field, error.line) == (
        str(path),
        "audit:PreToolUse[0]",
        "timeout",
        7,
    )
    assert "milliseconds" in error.problem


def test_workspace_folder_reads_only_hook_json_files(tmp_path: Path) -> None:
    path = workspace_file(tmp_path, RULES)
    write(path.parent / "notes.json", "{ not json at all")
    write(path.parent / "readme.yaml", "- [")
    write(path.parent / "notes.txt", "hello")
    loaded = load_config([path.parent])
    assert [s.path for s in loaded.sources] == [str(path)]


def test_disabled_workspace_file_is_skipped_unread(tmp_path: Path) -> None:
    path = workspace_file(
        tmp_path,
        '{"name": "off", "enabled": false, "hooks": {"NoSuchEvent": [{"type": "bogus"}]}}',
        name="off.hook.json",
    )
    loaded = load_config([path])
    assert loaded.hooks == ()
    assert loaded.sources[0].skipped == "disabled"


def test_workspace_commands_get_the_workspace_id_of_their_folder(tmp_path: Path) -> None:
    hooks = load_config([workspace_file(tmp_path, RULES)]).hooks
    action = hooks[0].action
    assert isinstance(action, CommandAction)
    assert action.workspace_id == "ws-1"


def test_unknown_workspace_event_suggests_a_name_and_names_its_line(tmp_path: Path) -> None:
    path = workspace_file(tmp_path, RULES.replace('"SessionEnd"', '"SessionEnds"'))
    error = problem([path])
    assert (error.field, error.line) == ("hooks.SessionEnds", 10)
    assert "Did you mean 'SessionEnd'?" in error.problem


def test_unknown_rule_key_names_hook_field_and_line(tmp_path: Path) -> None:
    path = workspace_file(tmp_path, RULES.replace('"matcher": "*"', '"matchr": "*"'))
    error = problem([path])
    assert (error.hook_id, error.field, error.line) == ("audit:SessionEnd[0]", "matchr", 11)


def test_rule_type_must_be_command_webhook_or_script(tmp_path: Path) -> None:
    path = workspace_file(
        tmp_path,
        RULES.replace('"type": "command", "command": "true"', '"type": "shell", "command": "true"'),
    )
    error = problem([path])
    assert (error.hook_id, error.field, error.line) == ("audit:PreToolUse[1]", "type", 8)


def test_workspace_script_rule_resolves_its_function_next_to_the_file(tmp_path: Path) -> None:
    path = workspace_file(
        tmp_path,
        '{"name": "s", "hooks": {"PostToolUse": [{"type": "script", "function": "lib/s.py:f"}]}}',
    )
    write(path.parent / "lib" / "s.py", "def f(event):\n    return 'seen'\n")
    (hook,) = load_config([path]).hooks
    assert hook.action(EVENT) == "seen"


def test_workspace_script_rule_without_its_file_names_the_function_field(tmp_path: Path) -> None:
    path = workspace_file(
        tmp_path,
        '{"name": "s", "hooks": {"PostToolUse": [\n'
        '  {"type": "script", "function": "no.py:f"}\n]}}',
    )
    error = problem([path])
    assert (error.field, error.line) == ("function", 2)


def test_workspace_webhook_rule_asks_for_the_workspace_body(tmp_path: Path) -> None:
    path = workspace_file(
        tmp_path,
        '{"name": "n", "hooks": {"PostToolUse": [{"matcher": "Edit", "type": "webhook", '
        '"url": "https://example.com/notify", "timeout": 10000}]}}',
    )
    (hook,) = load_config([path]).hooks
    assert hook.webhook == {
        "url": "https://example.com/notify",
        "format": "workspace",
        "workspaceId": "ws-1",
        "timeout": 10.0,
    }
    assert hook.action.kind == "webhook"


def test_workspace_webhook_rule_with_a_bad_url_names_the_url_field(tmp_path: Path) -> None:
    path = workspace_file(
        tmp_path,
        '{"name": "n", "hooks": {"PostToolUse": [\n'
        '  {"type": "webhook", "url": "ftp://example.com/x"}\n]}}',
    )
    error = problem([path])
    assert (error.field, error.line) == ("url", 2)


def test_json_workspace_shape_is_recognised_without_the_suffix(tmp_path: Path) -> None:
    path = write(tmp_path / "hooks.json", RULES)
    assert load_config([path]).sources[0].format == "workspace"


# -- agent-OS YAML ---------------------------------------------------------------------------------


def test_agent_events_document_is_returned_with_the_seed_defaults(tmp_path: Path) -> None:
    path = write(tmp_path / "hooks" / "events.yaml", "kind: agent_events\nname: shop\n")
    loaded = load_config([path])
    assert loaded.hooks == ()
    (config,) = loaded.agent_events
    assert isinstance(config, AgentEventsConfig)
    assert (config.agent, config.on, config.capacity) == ("shop", ["after_tool_result"], 5000)


def test_agent_events_on_key_is_a_key_not_a_yaml_boolean(tmp_path: Path) -> None:
    path = write(tmp_path / "events.yaml", "kind: agent_events\non: [after_turn, on_error]\n")
    assert load_config([path]).agent_events[0].on == ["after_turn", "on_error"]


def test_agent_events_unknown_field_is_named_with_its_line(tmp_path: Path) -> None:
    path = write(tmp_path / "events.yaml", "kind: agent_events\nname: x\ncapacty: 10\n")
    error = problem([path])
    assert (error.field, error.line) == ("capacty", 3)


def test_agent_events_relative_durable_path_is_next_to_the_file(tmp_path: Path) -> None:
    path = write(tmp_path / "events.yaml", "kind: agent_events\ndurable: true\npath: log.db\n")
    assert load_config([path]).agent_events[0].path == str(tmp_path / "log.db")


def test_unknown_agent_os_kind_is_an_error_on_its_line(tmp_path: Path) -> None:
    path = write(tmp_path / "x.yaml", "name: x\nkind: lua_hook\n")
    error = problem([path])
    assert (error.field, error.line) == ("kind", 2)


def test_script_hook_calls_a_function_named_after_each_point(tmp_path: Path) -> None:
    write(
        tmp_path / "scripts" / "audit.py",
        "def after_tool_result(e):\n    return 'tool'\ndef on_error(e):\n    return 'error'\n",
    )
    path = write(
        tmp_path / "audit.yaml",
        "kind: script_hook\nname: audit\non: [after_tool_result, on_error]\n"
        "script: scripts/audit.py\n",
    )
    hooks = load_config([path]).hooks
    assert [(h.id, h.event, h.action(EVENT)) for h in hooks] == [
        ("audit:after_tool_result", "after_tool_call", "tool"),
        ("audit:on_error", "on_error", "error"),
    ]


def test_script_hook_function_field_names_one_function(tmp_path: Path) -> None:
    write(tmp_path / "s.py", "def handle(e):\n    return 1\n")
    path = write(tmp_path / "s.yaml", "kind: script_hook\nscript: s.py\nfunction: handle\n")
    (hook,) = load_config([path]).hooks
    assert (hook.id, hook.event, hook.action(EVENT)) == ("s", "after_tool_call", 1)


def test_script_hook_missing_point_function_names_the_script_field(tmp_path: Path) -> None:
    write(tmp_path / "s.py", "def other(e):\n    pass\n")
    path = write(tmp_path / "s.yaml", "kind: script_hook\non: after_turn\nscript: s.py\n")
    error = problem([path])
    assert (error.hook_id, error.field, error.line) == ("s", "script", 3)
    assert "has no function 'after_turn'" in error.problem


def test_agent_os_unknown_point_names_its_line(tmp_path: Path) -> None:
    write(tmp_path / "s.py", "def f(e):\n    pass\n")
    path = write(
        tmp_path / "s.yaml",
        "kind: script_hook\nscript: s.py:f\non:\n  - after_turn\n  - aftr_loop\n",
    )
    error = problem([path])
    assert (error.field, error.line) == ("on", 5)


def test_dll_hook_plugin_folder_must_exist(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    path = write(tmp_path / "p.yaml", "kind: dll_hook\nhook: echo\npath: plugins/echo.dll\n")
    error = problem([path])
    assert (error.field, error.line) == ("path", 3)


def test_several_yaml_documents_in_one_file_all_load(tmp_path: Path) -> None:
    path = write(
        tmp_path / "all.yaml",
        "kind: agent_events\nname: a\n---\nkind: agent_events\nname: b\n",
    )
    assert [c.name for c in load_config([path]).agent_events] == ["a", "b"]


# -- kernel app ------------------------------------------------------------------------------------

APP = """
{
  "name": "guardrails",
  "capabilities": {
    "hooks": {
      "subscribes": ["message_received", "agent_end"],
      "intercepts": ["message_sending", "before_tool_call"]
    }
  },
  "hooks": [
    {"id": "sign", "type": "message_sending", "script": "app.py:sign"},
    {"id": "no-rm", "type": "before_tool_call", "command": "exit 0"},
    {"id": "inbox", "type": "message_received", "script": "app.py:inbox"}
  ]
}
"""


def kernel_app(tmp_path: Path, text: str = APP) -> Path:
    write(tmp_path / "app.py", "def sign(d):\n    return None\ndef inbox(d):\n    pass\n")
    return write(tmp_path / "app.json", text)


def test_kernel_app_loads_the_hooks_its_manifest_declares(tmp_path: Path) -> None:
    hooks = load_config([kernel_app(tmp_path)]).hooks
    assert [(h.id, h.event) for h in hooks] == [
        ("sign", "message_sending"),
        ("no-rm", "before_tool_call"),
        ("inbox", "message_received"),
    ]


def test_kernel_app_intercepting_an_undeclared_event_is_refused_whole(tmp_path: Path) -> None:
    path = kernel_app(
        tmp_path, APP.replace('"message_sending", "before_tool_call"', '"message_sending"')
    )
    sources = inspect_config([path])
    assert sources[0].hooks == ()
    (error,) = sources[0].problems
    assert (error.hook_id, error.field, error.line) == ("no-rm", "type", 11)
    assert "does not declare in capabilities.hooks.intercepts" in error.problem


def test_kernel_app_subscribing_to_an_undeclared_event_is_refused(tmp_path: Path) -> None:
    path = kernel_app(tmp_path, APP.replace('"message_received", "agent_end"', '"agent_end"'))
    error = problem([path])
    assert error.hook_id == "inbox"
    assert "capabilities.hooks.subscribes" in error.problem


def test_kernel_intercepts_may_only_name_interceptable_events(tmp_path: Path) -> None:
    path = kernel_app(
        tmp_path,
        APP.replace(
            '"message_sending", "before_tool_call"',
            '"message_sending", "before_tool_call", "agent_end"',
        ),
    )
    error = problem([path])
    assert (error.field, error.line) == ("capabilities.hooks.intercepts[2]", 6)


def test_kernel_python_hooks_on_intercepts_get_the_kernel_contract(
    tmp_path: Path, pipe: TestPipeline
) -> None:
    sign, no_rm, inbox = load_config([kernel_app(tmp_path)]).hooks
    assert (sign.intercept, no_rm.intercept, inbox.intercept) == (True, False, False)
    pipe.oh.hooks.register([sign])
    with pipe.tracer.operation("agent") as op:
        sent = op.send_message("chat", "user-1", "hello")
    assert sent is None  # the script returned None: blocked, as in the kernel


def test_kernel_hooks_block_accepts_only_subscribes_and_intercepts(tmp_path: Path) -> None:
    path = kernel_app(tmp_path, APP.replace('"subscribes"', '"subscribe"'))
    with pytest.raises(ConfigErrors) as info:
        load_config([path])
    assert "capabilities.hooks.subscribe" in {e.field for e in info.value.errors}


# -- hook lists (otelhooks / LobeHub) --------------------------------------------------------------


def test_lobehub_webhook_fields_pass_through_as_written(tmp_path: Path) -> None:
    path = write(
        tmp_path / "hooks.yaml",
        """
        hooks:
          - id: guard
            type: beforeToolCall
            webhook:
              url: https://example.com/decide
              responseHandling: toolCall
              onError: block
              allowedEnvVars: [TOKEN]
              headers: {Authorization: "Bearer ${TOKEN}"}
        """,
    )
    (hook,) = load_config([path]).hooks
    assert hook.webhook["responseHandling"] == "toolCall"
    assert hook.webhook["allowedEnvVars"] == ["TOKEN"]
    assert hook.error_policy == "block"


def test_json_hook_list_error_names_the_line_of_the_field(tmp_path: Path) -> None:
    path = write(
        tmp_path / "hooks.json",
        '[\n  {"id": "a", "type": "afterStep", "command": "true"},\n'
        '  {"id": "b",\n   "type": "afterStep",\n   "command": "true",\n   "timeout": -1}\n]\n',
    )
    error = problem([path])
    assert (error.hook_id, error.field, error.line) == ("b", "timeout", 6)


def test_yaml_hook_list_error_names_the_line_of_the_field(tmp_path: Path) -> None:
    path = write(
        tmp_path / "hooks.yaml",
        "hooks:\n  - id: a\n    type: afterStep\n    command: 'true'\n    matcher: 3\n",
    )
    error = problem([path])
    assert (error.hook_id, error.field, error.line) == ("a", "matcher", 5)


# -- the whole load --------------------------------------------------------------------------------


def test_load_is_all_or_nothing(tmp_path: Path) -> None:
    good = workspace_file(tmp_path, RULES, name="good.hook.json")
    workspace_file(
        tmp_path, '{"name": "bad", "hooks": {"PreToolUse": [{"type": "x"}]}}', "bad.hook.json"
    )
    with pytest.raises(ConfigError):
        load_config([good.parent])


def test_every_problem_of_every_file_is_collected(tmp_path: Path) -> None:
    a = workspace_file(
        tmp_path, RULES.replace('"matcher": "*"', '"matchr": "*"').replace("5000", "45000")
    )
    b = write(tmp_path / "b.yaml", "kind: agent_events\ncapacity: 0\n")
    with pytest.raises(ConfigErrors) as info:
        load_config([a, b])
    assert [(Path(e.file or "").name, e.field) for e in info.value.errors] == [
        ("audit.hook.json", "timeout"),
        ("audit.hook.json", "matchr"),
        ("b.yaml", "capacity"),
    ]
    assert "3 config problems" in str(info.value)


def test_hook_ids_are_unique_across_files(tmp_path: Path) -> None:
    a = write(tmp_path / "a.yaml", "- {id: same, type: afterStep, command: 'true'}\n")
    b = write(tmp_path / "b.yaml", "- {id: same, type: afterStep, command: 'true'}\n")
    error = problem([a, b])
    assert (error.file, error.hook_id, error.field) == (str(b), "same", "id")


def test_unrecognised_document_is_an_error(tmp_path: Path) -> None:
    error = problem([write(tmp_path / "x.json", '{"something": 1}')])
    assert "not a hook config" in error.problem


def test_unsupported_file_type_is_an_error(tmp_path: Path) -> None:
    assert "unsupported file type" in problem([write(tmp_path / "x.toml", "a = 1")]).problem


def test_missing_path_is_an_error(tmp_path: Path) -> None:
    assert problem([tmp_path / "nope.json"]).file == str(tmp_path / "nope.json")


def test_an_empty_folder_gives_nothing_without_error(tmp_path: Path) -> None:
    loaded = load_config([tmp_path])
    assert (loaded.hooks, loaded.sources[0].skipped) == ((), "no config files here")


def test_no_paths_give_an_empty_config() -> None:
    assert load_config([]).hooks == ()


def test_detected_formats(tmp_path: Path) -> None:
    cases = {
        "a.hook.json": "{}",
        "b.yaml": "kind: agent_events",
        "c.json": '{"capabilities": {}}',
        "d.yaml": "- {id: x}",
        "e.json": '{"hooks": []}',
    }
    found = {}
    for name, text in cases.items():
        (doc,) = parse_file(write(tmp_path / name, text))
        found[name] = detect_format(doc)
    assert found == {
        "a.hook.json": "workspace",
        "b.yaml": "agent_os",
        "c.json": "kernel_app",
        "d.yaml": "hook_list",
        "e.json": "hook_list",
    }


def test_every_example_loads(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))
    folders = [
        EXAMPLES / "workspaces" / "demo-workspace" / "hooks",
        EXAMPLES / "agent-os" / "hooks",
        EXAMPLES / "lobehub",
        EXAMPLES / "kernel-app",
    ]
    loaded = load_config(folders)
    formats = {s.format for s in loaded.sources}
    assert formats == {"workspace", "agent_os", "hook_list", "kernel_app"}
    assert len(loaded.agent_events) == 1
    assert len(loaded.hooks) >= 12


# -- properties: nothing but ConfigError -----------------------------------------------------------

KEYS = st.sampled_from(
    [
        "hooks", "kind", "capabilities", "subscribes", "intercepts", "type", "matcher", "command",
        "timeout", "enabled", "name", "description", "on", "script", "function", "hook", "id",
        "url", "webhook", "agent", "watch", "ignore", "mutating", "capacity", "intercept",
        "on_error", "dialect", "durable", "PreToolUse", "beforeToolCall", "after_tool_result",
        "message_sending", "x",
    ]
)  # fmt: skip
WORDS = st.sampled_from(
    [
        "command", "webhook", "script", "agent_events", "script_hook", "dll_hook", "PreToolUse",
        "before_tool_call", "afterStep", "*", "/[/", "x.py:f", "true", "http://127.0.0.1:9/x",
        "toolCall", "block", "workspace", "",
    ]
)  # fmt: skip
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(10**6), 10**6),
    st.floats(),
    st.text(max_size=8),
    WORDS,
)
VALUES = st.recursive(
    SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(KEYS, inner, max_size=5),
    max_leaves=24,
)
NAMES = st.sampled_from(["a.json", "a.yaml", "a.hook.json", "hooks.yml"])
PROPERTY = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def load_only_config_errors(name: str, content: str | bytes) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / name
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8", errors="surrogatepass")
        with contextlib.suppress(ConfigError):
            load_config([path])


@PROPERTY
@given(name=NAMES, data=VALUES)
def test_any_structure_raises_only_config_errors(name: str, data: Any) -> None:
    if name.endswith((".yaml", ".yml")):
        text = yaml.safe_dump(data, allow_unicode=True)
    else:
        text = json.dumps(data)
    load_only_config_errors(name, text)


@PROPERTY
@given(name=NAMES, text=st.text(max_size=200))
def test_any_text_raises_only_config_errors(name: str, text: str) -> None:
    load_only_config_errors(name, text)


@PROPERTY
@given(name=NAMES, raw=st.binary(max_size=200))
def test_any_bytes_raise_only_config_errors(name: str, raw: bytes) -> None:
    load_only_config_errors(name, raw)


@PROPERTY
@given(
    rules=st.dictionaries(
        st.sampled_from(["PreToolUse", "SessionEnd", "PostToolUse", "Nope"]),
        st.lists(st.dictionaries(KEYS, SCALARS, max_size=6), max_size=3),
        max_size=3,
    ),
    enabled=st.one_of(st.booleans(), SCALARS),
)
def test_any_workspace_rules_raise_only_config_errors(rules: Any, enabled: Any) -> None:
    load_only_config_errors(
        "w.hook.json", json.dumps({"name": "w", "enabled": enabled, "hooks": rules})
    )


# -- Claude Code settings.json ----------------------------------------------------------------

CLAUDE_SETTINGS = """
{
  "permissions": {"allow": ["Bash(npm test)"]},
  "env": {"FOO": "bar"},
  "hooks": {
    "PreToolUse": [
      {
        "matcher": "Edit|Write",
        "hooks": [
          {"type": "command", "command": "echo edit", "timeout": 5},
          {"type": "command", "command": "echo again"}
        ]
      },
      {"matcher": "Bash", "hooks": [{"type": "command", "command": "GUARD"}]}
    ],
    "Stop": [{"hooks": [{"type": "command", "command": "echo done"}]}]
  }
}
"""


def claude_settings(tmp_path: Path, text: str = CLAUDE_SETTINGS) -> Path:
    return write(tmp_path / ".claude" / "settings.json", text)


def test_claude_code_settings_load_with_ids_events_and_timeouts_in_seconds(tmp_path: Path) -> None:
    path = claude_settings(tmp_path)
    (source,) = inspect_config([path])
    assert source.format == "claude_settings"
    hooks = load_config([path]).hooks
    assert [(h.id, h.event, h.timeout) for h in hooks] == [
        ("settings:PreToolUse[0].hooks[0]", "before_tool_call", 5.0),
        ("settings:PreToolUse[0].hooks[1]", "before_tool_call", 600.0),
        ("settings:PreToolUse[1].hooks[0]", "before_tool_call", 600.0),
        ("settings:Stop[0].hooks[0]", "on_complete", 600.0),
    ]
    assert all(isinstance(h.action, CommandAction) for h in hooks)


def test_claude_code_matchers_are_regexes_and_a_group_without_one_matches_all(
    tmp_path: Path,
) -> None:
    edit, _, bash, stop = load_config([claude_settings(tmp_path)]).hooks
    assert edit.compiled_matcher.matches(("Write",))
    assert edit.compiled_matcher.matches(("Edit",))
    assert not edit.compiled_matcher.matches(("Read",))
    assert bash.compiled_matcher.matches(("Bash",))
    assert stop.compiled_matcher.matches(("anything",))


def test_a_claude_code_guard_from_settings_denies_the_tool_call(
    tmp_path: Path, pipe: TestPipeline
) -> None:
    guard = 'echo "no shell in CI" >&2; exit 2'  # Claude Code's blocking exit code
    text = CLAUDE_SETTINGS.replace('"GUARD"', json.dumps(guard))
    pipe.register(*load_config([claude_settings(tmp_path, text)]).hooks)
    with pipe.tracer.operation("a") as op, op.step() as step:
        denied = step.run_tool("shell", "Bash", {"command": "rm -rf /"}, lambda command: "ran")
        allowed = step.run_tool("fs", "Read", {"path": "a"}, lambda path: "text")
    assert (denied.success, denied.content) == (False, "no shell in CI")
    assert allowed.content == "text"


def test_an_event_claude_code_settings_name_that_otelhooks_does_not_know_is_a_warning(
    tmp_path: Path,
) -> None:
    """Claude Code skips an event name it does not know and runs the file's other hooks: a typo
    (or a newer CLI's event) is a warning naming the file, the line and the likely event, and
    every other hook loads (before, a config error, and the bridge then ran no guard at all)."""
    import warnings

    path = claude_settings(tmp_path, CLAUDE_SETTINGS.replace('"Stop":', '"Stopp":'))
    with warnings.catch_warnings(record=True) as said:
        warnings.simplefilter("always")
        hooks = load_config([path]).hooks
    [warning] = [w for w in said if "Stopp" in str(w.message)]
    assert warning.filename == str(path)
    assert warning.lineno > 1
    assert "Stop" in str(warning.message).replace("Stopp", "")
    assert hooks
    assert all("Stopp" not in h.id for h in hooks)


@pytest.mark.parametrize(
    ("change", "hook_id", "field", "says"),
    [
        (('"echo again"}', '"echo again", "timeout": "60"}'), "settings:PreToolUse[0].hooks[1]",
         "timeout", "seconds"),
        (('"command": "echo done"}', '"command": "echo done", "async": "yes"}'),
         "settings:Stop[0].hooks[0]", "async", "true or false"),
    ],
)  # fmt: skip
def test_claude_code_settings_errors_name_file_hook_field_and_line(
    tmp_path: Path, change: tuple[str, str], hook_id: str | None, field: str, says: str
) -> None:
    path = claude_settings(tmp_path, CLAUDE_SETTINGS.replace(*change))
    with pytest.raises(ConfigError) as info:
        load_config([path])
    found = info.value.errors if isinstance(info.value, ConfigErrors) else [info.value]
    errors = [e for e in found if e.field == field]
    assert errors, info.value
    error = errors[0]
    assert error.file == str(path)
    assert error.hook_id == hook_id
    assert error.line is not None
    assert says in error.problem
