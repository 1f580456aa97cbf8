"""``otelhooks claude-code``: the Claude Code hook bridge (one hook event per invocation).

Register it for every hook event in ``.claude/settings.json`` (see ``docs/adapters.md``). It
reads the event JSON on stdin, writes Claude Code's answer on stdout (JSON) or stderr (exit 2),
and logs only to stderr. A problem of the bridge itself (bad JSON, a broken hooks file) exits 1,
which Claude Code treats as a non-blocking error: it is shown, and the tool is not stopped;
with ``--fail-closed`` a ``PreToolUse`` answers deny instead. All the work is
:func:`otelhooks.integrations.claude_code.run_hook`.
"""

from __future__ import annotations

import argparse
import os
import sys

from otelhooks._cli._common import Subcommands

__all__ = ["add_parser"]


def _claude_code(args: argparse.Namespace) -> int:
    if sys.stdin.isatty():  # typed in a terminal, it would wait for an event nobody sends
        print(
            "otelhooks claude-code: Claude Code runs this, one hook event (JSON) on stdin; "
            "`otelhooks claude-code install` sets it up",
            file=sys.stderr,
        )
        return 2
    from otelhooks.integrations.coding_agents._held_output import hold

    output = hold()  # first: what the process writes comes after its answer, its pipes kept
    from otelhooks._actions._approval import UNSERVED_BLOCKS
    from otelhooks._cli._common import log_to_stderr

    log_to_stderr()
    UNSERVED_BLOCKS.set()  # a hook process: nobody lists its approvals
    from otelhooks._cli._claude_code_install_cmd import bridge_options
    from otelhooks.integrations.coding_agents._one_process import answer_process
    from otelhooks.integrations.coding_agents._run import answer_time

    options = bridge_options(args)
    answer_s, fixed = answer_time(os.environ)
    # bytes, decoded leniently by the bridge: a stray invalid byte is not a reason to fail open
    raw = sys.stdin.buffer.read()
    return answer_process(raw, options, output, answer_s=answer_s, fixed=fixed)


def _seconds(text: str) -> float:
    value = float(text)
    if not 0 < value < 1e6:
        raise argparse.ArgumentTypeError(f"not a number of seconds above 0: {text!r}")
    return value


def add_parser(sub: Subcommands) -> None:
    cmd = sub.add_parser(
        "claude-code",
        help="the Claude Code hook bridge: register it for every hook event",
        description="Read one Claude Code hook event on stdin: spans (one trace per session, "
        "one execute_tool span per tool use across processes), otelhooks hooks, and Claude "
        "Code's answer for PreToolUse and UserPromptSubmit. Relative paths resolve against "
        "$CLAUDE_PROJECT_DIR when Claude Code sets it.",
    )
    cmd.add_argument(
        "--hooks",
        action="append",
        default=[],
        metavar="PATH",
        help="hook config file or folder (repeatable; also $OTELHOOKS_HOOKS, "
        f"{os.pathsep}-separated)",
    )
    cmd.add_argument(
        "--traces-out",
        metavar="PATH",
        help="append spans as OTLP JSON lines to PATH (default: $OTELHOOKS_TRACES_OUT)",
    )
    cmd.add_argument(
        "--state",
        metavar="PATH",
        help="the state file shared by hook processes (default: $OTELHOOKS_BRIDGE_STATE or "
        "~/.otelhooks/claude-code.sqlite3)",
    )
    cmd.add_argument(
        "--export-env",
        metavar="PATH",
        help="export settings file (OTEL_*/OTELHOOKS_* KEY=VALUE lines; default: "
        "otelhooks.env next to the --hooks files, or $OTELHOOKS_EXPORT_ENV)",
    )
    cmd.add_argument(
        "--deny-mode",
        choices=("json", "exit2"),
        default="json",
        help="answer a denial with hookSpecificOutput.permissionDecision JSON (default) or "
        "with exit code 2 and the reason on stderr",
    )
    cmd.add_argument(
        "--fail-closed",
        action="store_true",
        help="when the bridge cannot load its hooks or read its input on PreToolUse, answer "
        "deny with the reason (default: exit 1, which Claude Code does not treat as a block)",
    )
    cmd.add_argument(
        "--hook-timeout",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="the timeout Claude Code gives this hook (install writes it with the entry's "
        "timeout): the bridge answers before it, and blocks an event whose guards' own "
        "timeouts it cannot wait for (default: not known)",
    )
    cmd.add_argument("--service-name", default="claude-code", help="service.name of the spans")
    cmd.add_argument(
        "--dialect",
        choices=("claude-code", "codex", "gemini"),
        default="claude-code",
        help="the hook schema of the input and the answer (`otelhooks codex install` and "
        "`otelhooks gemini install` write theirs)",
    )
    from otelhooks._cli._claude_code_install_cmd import add_subcommands

    add_subcommands(cmd)
    cmd.set_defaults(func=_claude_code)
