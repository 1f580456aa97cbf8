"""Guards without a CLI, and with the real Codex CLI: the bridge's answer to a hook input under
a hooks file, a guard on one matcher, the captured hook inputs, and a patch of ``notes.txt`` (as
``apply_patch`` takes it, and as a shell command that runs the patcher)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from otelhooks.integrations.claude_code import BridgeOptions, run_hook
from otelhooks.integrations.coding_agents import install_agent
from tests.coding_agents_cli._runs import CliRun, Steps, bridge_env, codex_config, run_codex

KINDS = Path(__file__).parent / "captured" / "kinds"
PATCH = "*** Begin Patch\n*** Update File: notes.txt\n@@\n-alpha\n+ALPHA\n beta\n*** End Patch\n"
HEREDOC = f"apply_patch <<'EOF'\n{PATCH}EOF\n"
# A hooks file whose guard denies every shell command, and says why (exit 2).
DENY_SHELL_GUARD = """\
hooks:
  - id: no-rm
    type: PreToolUse
    matcher: "@shell"
    command: "echo 'deleting is not allowed here' >&2; exit 2"
"""
# A hooks file whose guard denies a shell command containing `rm -r`, and says why (exit 2).
RM_GUARD = """\
hooks:
  - id: no-rm
    type: PreToolUse
    matcher: "@shell"
    command: >-
      case "$HOOK_TOOL_INPUT" in *'rm -r'*) echo 'deleting is not allowed here' >&2; exit 2;; esac
"""


def rewrite_guard(decision: str) -> str:
    """A hooks file whose guard answers every shell call ``decision`` with the command rewritten
    to ``echo rewritten > note.txt`` (a Claude Code answer, printed by the command)."""
    answer = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": decision,
            "updatedInput": {"command": "echo rewritten > note.txt"},
        }
    }
    quoted = json.dumps(answer).replace('"', '\\"')
    return (
        'hooks:\n  - id: safer\n    type: PreToolUse\n    matcher: "@shell"\n'
        f"    command: \"echo '{quoted}'\"\n"
    )


def tool_guard(matcher: str) -> str:
    """A hooks file whose guard denies every call ``matcher`` matches ("not this tool")."""
    return (
        "hooks:\n  - id: guard\n    type: PreToolUse\n"
        f"    matcher: {json.dumps(matcher)}\n"
        "    command: \"echo 'not this tool' >&2; exit 2\"\n"
    )


def bridge_answer(
    tmp_path: Path, dialect: str, hooks: str, event: dict[str, Any], *, name: str = "hooks.yaml"
) -> str:
    """What the bridge prints for ``event`` (``dialect``'s hook input) under the hooks file
    ``tmp_path/name`` holding ``hooks``."""
    (tmp_path / name).write_text(hooks)
    options = BridgeOptions(
        hooks=(str(tmp_path / name),),
        state=str(tmp_path / "state.sqlite3"),
        dialect=dialect,
    )
    return run_hook(json.dumps(event), options, environ={}).stdout


def patch_under_codex(project: Path, tmp_path: Path, matcher: str, steps: Steps) -> CliRun:
    """The real Codex CLI asked to patch ``project/notes.txt`` ("alpha\\nbeta\\n") by ``steps``,
    under an installed ``tool_guard(matcher)``."""
    (project / "notes.txt").write_text("alpha\nbeta\n")
    (project / "hooks.yaml").write_text(tool_guard(matcher))
    install_agent("codex", project=project, hooks_file="hooks.yaml")
    home = tmp_path / "home"
    codex_config(home, trusted=project)
    return run_codex(project, home, steps, extra_env=bridge_env(tmp_path))
