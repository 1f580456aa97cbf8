"""Hook files: JSON and YAML hook lists, handlers by import path, errors that say where."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from otelhooks import ConfigError, load_config
from otelhooks._config import import_handler


def test_yaml_hook_list_loads_with_handler_import_paths(tmp_path: Path) -> None:
    path = tmp_path / "hooks.yaml"
    path.write_text(
        "hooks:\n"
        "  - id: a\n    type: afterToolCall\n    matcher: '^fs/'\n    handler: json:dumps\n"
        "  - id: b\n    type: PreToolUse\n    handler: os.path.basename\n"
    )
    hooks = load_config([path]).hooks
    assert [(h.id, h.event) for h in hooks] == [("a", "after_tool_call"), ("b", "before_tool_call")]
    assert hooks[0].handler is json.dumps


def test_json_list_without_wrapper_loads(tmp_path: Path) -> None:
    path = tmp_path / "hooks.json"
    path.write_text(json.dumps([{"id": "x", "type": "onComplete", "handler": "json:dumps"}]))
    assert [h.id for h in load_config([path]).hooks] == ["x"]


def test_invalid_json_names_the_file_and_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.json"
    path.write_text('[\n  {"id": "x",\n  oops}\n]')
    with pytest.raises(ConfigError) as info:
        load_config([path])
    assert info.value.file == str(path)
    assert info.value.line == 3
    assert f"{path}:3" in str(info.value)


def test_invalid_yaml_names_the_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text("hooks:\n  - id: a\n   type: [unclosed\n")
    with pytest.raises(ConfigError) as info:
        load_config([path])
    assert info.value.line is not None


def test_unknown_event_names_hook_and_field_and_suggests(tmp_path: Path) -> None:
    path = tmp_path / "hooks.json"
    path.write_text(json.dumps([{"id": "oops", "type": "afterToolcall", "handler": "json:dumps"}]))
    with pytest.raises(ConfigError) as info:
        load_config([path])
    message = str(info.value)
    assert (info.value.hook_id, info.value.field) == ("oops", "type")
    assert "Did you mean 'afterToolCall'?" in message
    assert str(path) in message


def test_unimportable_handler_names_the_field(tmp_path: Path) -> None:
    path = tmp_path / "hooks.json"
    path.write_text(json.dumps([{"id": "h", "type": "afterStep", "handler": "no_such_mod:fn"}]))
    with pytest.raises(ConfigError) as info:
        load_config([path])
    assert (info.value.hook_id, info.value.field) == ("h", "handler")


def test_unknown_keys_are_errors(tmp_path: Path) -> None:
    path = tmp_path / "hooks.json"
    path.write_text(json.dumps([{"id": "h", "type": "afterStep", "handler": "json:dumps", "x": 1}]))
    with pytest.raises(ConfigError) as info:
        load_config([path])
    assert info.value.field == "x"


def test_duplicate_ids_across_files_are_refused(tmp_path: Path) -> None:
    for name in ("a.json", "b.json"):
        (tmp_path / name).write_text(
            json.dumps([{"id": "same", "type": "afterStep", "handler": "json:dumps"}])
        )
    with pytest.raises(ConfigError, match="duplicate hook id"):
        load_config([tmp_path / "a.json", tmp_path / "b.json"])


def test_import_handler_requires_a_callable() -> None:
    with pytest.raises(ConfigError, match="not callable"):
        import_handler("os:sep")


def test_loading_an_empty_hooks_folder_says_no_hook_comes_from_it(tmp_path: Path) -> None:
    # a guard meant to be there, and none: every call went through without a word
    (tmp_path / "hooks").mkdir()
    (tmp_path / "hooks" / "policy.yaml.bak").write_text("hooks: []\n")  # not a config file
    with capture_logs() as logs:
        assert load_config([tmp_path / "hooks"]).hooks == ()
    assert [(e["log_level"], e["event"], e["folder"]) for e in logs] == [
        (
            "warning",
            "a hooks folder holds no config file: no hook comes from it",
            str(tmp_path / "hooks"),
        )
    ]


def test_loading_hooks_that_mean_what_they_say_logs_nothing(tmp_path: Path) -> None:
    path = tmp_path / "hooks.yaml"
    path.write_text(
        "hooks:\n  - id: guard\n    type: PreToolUse\n    matcher: Bash\n    command: 'true'\n"
    )
    with capture_logs() as logs:
        load_config([path, tmp_path])
    assert logs == []
