"""``otelhooks codex|gemini install`` and ``uninstall``: merged, idempotent, exact."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from otelhooks import load_config
from otelhooks.integrations.claude_code import is_ours
from otelhooks.integrations.coding_agents import hooks_path, install_agent, uninstall_agent

THEIRS = """{
  "model": {"name": "gemini-2.5-flash"},
  "hooks": {
    "BeforeTool": [
      {"matcher": "write_file", "hooks": [{"name": "mine", "type": "command", "command": "lint"}]}
    ]
  }
}
"""


@pytest.mark.parametrize("dialect", ["codex", "gemini"])
def test_install_keeps_every_other_hook_and_key(dialect: str, tmp_path: Path) -> None:
    path = hooks_path(dialect, project=tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(THEIRS)
    install_agent(dialect, project=tmp_path, hooks_file="hooks.yaml")
    data = json.loads(path.read_text())
    assert data["model"] == {"name": "gemini-2.5-flash"}
    theirs = data["hooks"]["BeforeTool"][0]
    assert theirs["hooks"] == [{"name": "mine", "type": "command", "command": "lint"}]


@pytest.mark.parametrize("dialect", ["codex", "gemini"])
def test_install_twice_changes_nothing(dialect: str, tmp_path: Path) -> None:
    install_agent(dialect, project=tmp_path, hooks_file="hooks.yaml")
    again = install_agent(dialect, project=tmp_path, hooks_file="hooks.yaml")
    assert again.verb == "unchanged"


@pytest.mark.parametrize("dialect", ["codex", "gemini"])
def test_uninstall_gives_back_the_bytes(dialect: str, tmp_path: Path) -> None:
    path = hooks_path(dialect, project=tmp_path)
    path.parent.mkdir(parents=True)
    path.write_text(THEIRS)
    install_agent(dialect, project=tmp_path, hooks_file="hooks.yaml")
    uninstall_agent(dialect, project=tmp_path)
    assert path.read_text() == THEIRS


@pytest.mark.parametrize("dialect", ["codex", "gemini"])
def test_uninstall_of_a_file_install_created_leaves_no_file(dialect: str, tmp_path: Path) -> None:
    install_agent(dialect, project=tmp_path, hooks_file="hooks.yaml")
    change = uninstall_agent(dialect, project=tmp_path)
    assert change.verb == "deleted"
    assert not hooks_path(dialect, project=tmp_path).exists()


def test_codex_handlers_name_the_dialect_and_the_hooks_file_absolutely(tmp_path: Path) -> None:
    install_agent("codex", project=tmp_path, hooks_file="hooks.yaml")
    data = json.loads((tmp_path / ".codex" / "hooks.json").read_text())
    handler = data["hooks"]["PreToolUse"][0]["hooks"][0]
    assert is_ours(handler)
    assert f"--dialect codex --hooks {tmp_path / 'hooks.yaml'}" in handler["command"]
    assert data["hooks"]["PreToolUse"][0]["matcher"] == "*"
    assert data["hooks"]["SessionEnd"][0]["hooks"][0]["timeout"] == 3  # Codex's own cap


def test_gemini_handlers_are_named_and_count_milliseconds(tmp_path: Path) -> None:
    install_agent("gemini", project=tmp_path, hooks_file="hooks.yaml")
    data = json.loads((tmp_path / ".gemini" / "settings.json").read_text())
    handler = data["hooks"]["BeforeTool"][0]["hooks"][0]
    assert handler["name"] == "otelhooks"
    assert handler["timeout"] == 30_000
    assert "--dialect gemini" in handler["command"]


def test_cli_install_says_what_codex_needs_to_trust(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "otelhooks", "codex", "install", "--project", str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        env={"HOME": str(tmp_path / "home"), "PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 0, done.stderr
    assert f'[projects."{tmp_path.resolve()}"] trust_level = "trusted"' in done.stdout
    assert "--dangerously-bypass-hook-trust" in done.stdout
    starter = tmp_path / ".codex" / "otelhooks.yaml"
    assert load_config([starter]).hooks  # the starter hook file loads


def _otelhooks(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "otelhooks", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", **env},
    )


@pytest.mark.parametrize(
    ("dialect", "user_file"),
    [("codex", "codex-home/hooks.json"), ("gemini", "home/.gemini/settings.json")],
)
def test_cli_user_install_with_hooks_file_writes_the_users_file_and_uninstalls_exactly(
    tmp_path: Path, dialect: str, user_file: str
) -> None:
    env = {"HOME": str(tmp_path / "home"), "CODEX_HOME": str(tmp_path / "codex-home")}
    path = tmp_path / user_file
    path.parent.mkdir(parents=True)
    path.write_text(THEIRS)
    hooks = tmp_path / "policy.yaml"
    hooks.write_text("hooks: []\n")
    done = _otelhooks(dialect, "install", "--user", "--hooks", str(hooks), "--no-traces", env=env)
    assert done.returncode == 0, done.stderr
    data = json.loads(path.read_text())
    ours = [h for groups in data["hooks"].values() for g in groups for h in g["hooks"]]
    commands = [h["command"] for h in ours if is_ours(h)]
    assert commands
    assert all(f"--dialect {dialect} --hooks {hooks}" in c for c in commands)
    assert data["hooks"]["BeforeTool"][0]["hooks"][0]["name"] == "mine"  # theirs, untouched
    assert not (tmp_path / "project").exists()
    again = _otelhooks(dialect, "install", "--user", "--hooks", str(hooks), "--no-traces", env=env)
    assert again.returncode == 0, again.stderr
    assert "unchanged" in again.stdout
    gone = _otelhooks(dialect, "uninstall", "--user", env=env)
    assert gone.returncode == 0, gone.stderr
    assert path.read_text() == THEIRS


@pytest.mark.parametrize("dialect", ["codex", "claude-code"])
def test_an_install_process_never_imports_the_bridge(tmp_path: Path, dialect: str) -> None:
    """Installing imported the whole bridge (its span pipeline and OTLP exporters) through the
    packages' own ``__init__``: a third of the process's start, in every install a script or a
    setup runs."""
    env = {"HOME": str(tmp_path / "home"), "CODEX_HOME": str(tmp_path / "codex-home")}
    (tmp_path / "codex-home").mkdir()
    (tmp_path / "policy.yaml").write_text("hooks: []\n")
    install = [
        dialect,
        "install",
        "--user",
        "--hooks",
        str(tmp_path / "policy.yaml"),
        "--no-traces",
    ]
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "otelhooks", *install],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin", **env},
    )
    assert done.returncode == 0, done.stderr
    loaded = {line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines()}
    assert "otelhooks.integrations.claude_code._entries" in loaded  # an install ran
    bridge = {"otelhooks.integrations.coding_agents._bridge", "otelhooks._setup"}
    assert loaded & bridge == set()


@pytest.mark.parametrize("kind", ["http", None])
def test_a_codex_file_codex_would_reject_whole_is_refused_untouched(
    tmp_path: Path, kind: str | None
) -> None:
    # Codex 0.171 rejects the whole hooks.json for a handler type it does not parse
    # (tests/coding_agents_cli/test_codex_http_hooks.py): merged there, our guard would never run
    path = hooks_path("codex", project=tmp_path)
    path.parent.mkdir(parents=True)
    handler = {"url": "http://127.0.0.1:9/x"} if kind is None else {"type": kind, "url": "u"}
    theirs = {"hooks": {"PreToolUse": [{"matcher": "Bash", "hooks": [handler]}]}}
    text = json.dumps(theirs, indent=2) + "\n"
    path.write_text(text)
    with pytest.raises(ValueError, match=f"PreToolUse hook of type {kind!r}: Codex CLI rejects"):
        install_agent("codex", project=tmp_path, hooks_file="hooks.yaml")
    assert path.read_text() == text


def test_a_codex_file_of_hook_types_codex_parses_takes_ours_beside_them(tmp_path: Path) -> None:
    path = hooks_path("codex", project=tmp_path)
    path.parent.mkdir(parents=True)
    mine = [{"type": t, "command": "true"} for t in ("command", "prompt", "agent", "mcp_tool")]
    path.write_text(json.dumps({"hooks": {"Stop": [{"hooks": mine}]}}))
    install_agent("codex", project=tmp_path, hooks_file="hooks.yaml")
    assert json.loads(path.read_text())["hooks"]["Stop"][0]["hooks"] == mine


def test_a_gemini_settings_file_with_comments_is_refused_untouched_saying_why(
    tmp_path: Path,
) -> None:
    # Gemini CLI reads comments in settings.json; the installer keeps only what it understands
    path = hooks_path("gemini", project=tmp_path)
    path.parent.mkdir(parents=True)
    text = '{\n  // mine\n  "model": {"name": "gemini-2.5-flash"}\n}\n'
    path.write_text(text)
    with pytest.raises(ValueError, match="if it holds comments: they cannot be kept"):
        install_agent("gemini", project=tmp_path, hooks_file="hooks.yaml")
    assert path.read_text() == text


def _guard_command(dialect: str, tmp_path: Path, *, fail_closed: bool) -> str:
    install_agent(dialect, project=tmp_path, hooks_file="hooks.yaml", fail_closed=fail_closed)
    event = "PreToolUse" if dialect == "codex" else "BeforeTool"
    data = json.loads(hooks_path(dialect, project=tmp_path).read_text())
    command: str = data["hooks"][event][0]["hooks"][0]["command"]
    others = [g["hooks"][0]["command"] for e, (g,) in data["hooks"].items() if e != event]
    assert "the guard could not run" not in " ".join(others)  # the tool guard's alone
    assert is_ours(data["hooks"][event][0]["hooks"][0])
    return command


@pytest.mark.parametrize("dialect", ["codex", "gemini"])
@pytest.mark.parametrize(
    ("bridge_exit", "cli_sees"),
    [(0, 0), (2, 2), (1, 2), (127, 2), (139, 2)],
    ids=["answered", "denied", "failed", "cannot-start", "crashed"],
)
def test_the_fail_closed_guard_blocks_on_any_exit_the_bridge_does_not_answer_with(
    dialect: str, tmp_path: Path, bridge_exit: int, cli_sees: int
) -> None:
    # Codex and Gemini have no onFailure: the installed command itself turns an exit that is
    # not the bridge's answer (0, or 2 with the reason) into a block, run as they run it (bash)
    command = _guard_command(dialect, tmp_path, fail_closed=True)
    stand_in = tmp_path / "python3"  # the interpreter install wrote, replaced: it exits so
    stand_in.write_text(f"#!/bin/sh\necho '{{}}'; echo 'its reason' >&2; exit {bridge_exit}\n")
    stand_in.chmod(0o755)
    interpreter = command.split(" ", 1)[0]
    run = subprocess.run(
        ["bash", "-c", command.replace(interpreter, str(stand_in), 1)],
        input="{}", capture_output=True, text=True, timeout=30, check=False,
    )  # fmt: skip
    assert run.returncode == cli_sees
    assert run.stdout == "{}\n"
    added = f"otelhooks: the guard could not run (exit {bridge_exit}): blocked (--fail-closed)"
    assert run.stderr == "its reason\n" + (added + "\n" if cli_sees != bridge_exit else "")


@pytest.mark.parametrize("dialect", ["codex", "gemini"])
def test_without_fail_closed_the_guard_command_is_the_bridge_alone(
    dialect: str, tmp_path: Path
) -> None:
    command = _guard_command(dialect, tmp_path, fail_closed=False)
    assert "exit 2" not in command
    assert command.endswith("# otelhooks:installed")
