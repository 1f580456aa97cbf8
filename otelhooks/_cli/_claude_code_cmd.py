"""``otelhooks claude-code``: the Claude Code hook bridge (one hook event per invocation).

Register it for every hook event in ``.claude/settings.json`` (see ``docs/adapters.md``). It
reads the event JSON on stdin, writes Claude Code's answer on stdout (JSON) or stderr (exit 2),
and logs only to stderr. A problem of the bridge itself (bad JSON, a broken hooks file) exits 1,
which Claude Code treats as a non-blocking error: it is shown, and the tool is not stopped. The
one exception: a ``PreToolUse`` input nested too deeply for the JSON parser (its tool input is
the attacker's) exits 2, a deny, when a ``before_tool_call`` hook has ``on_error: block``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from otelhooks._errors import ConfigError

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter

    from otelhooks._hooks import Hook

__all__ = ["add_parser"]

HOOKS_ENV = "OTELHOOKS_HOOKS"
TRACES_ENV = "OTELHOOKS_TRACES_OUT"


def _log_to_stderr() -> None:
    import structlog

    from otelhooks._logging import configure_logging

    configure_logging()
    structlog.configure(logger_factory=structlog.PrintLoggerFactory(file=sys.stderr))


def _hook_paths(args: argparse.Namespace) -> list[str]:
    paths = list(args.hooks)
    env = os.environ.get(HOOKS_ENV, "")
    paths.extend(p for p in env.split(os.pathsep) if p)
    return paths


_TOO_DEEP: Final = object()
_PRE_TOOL_USE: Final = re.compile(r'"hook_event_name"\s*:\s*"PreToolUse"')


def _unreadable_input(text: str, hooks: Sequence[Hook]) -> int:
    """An input nested too deeply for the JSON parser (the tool input is the attacker's): on a
    ``PreToolUse`` with a guard set to ``on_error: block``, deny (exit 2), as a guard that
    cannot decide must; otherwise a non-blocking error (exit 1)."""
    problem = "the hook input is nested too deeply to read"
    guarded = any(h.spec.name == "before_tool_call" and h.error_policy == "block" for h in hooks)
    if _PRE_TOOL_USE.search(text) and guarded:
        print(f"Blocked by otelhooks: {problem}", file=sys.stderr)
        return 2
    print(f"otelhooks claude-code: {problem}", file=sys.stderr)
    return 1


def _claude_code(args: argparse.Namespace) -> int:
    import structlog

    _log_to_stderr()
    from otelhooks._config import load_config
    from otelhooks._export import OtlpJsonLinesSpanExporter
    from otelhooks._setup import _otlp_configured, otlp_span_exporter
    from otelhooks.integrations.claude_code import BridgeState, ClaudeCodeBridge
    from otelhooks.integrations.claude_code._spans import LockedFileExporter

    text = sys.stdin.read()
    try:
        payload: Any = json.loads(text or "null")
    except RecursionError:
        payload = _TOO_DEEP
    except ValueError as exc:
        print(f"otelhooks claude-code: the hook input is not JSON: {exc}", file=sys.stderr)
        return 1
    try:
        hooks = load_config(_hook_paths(args)).hooks
    except ConfigError as exc:
        print(f"otelhooks claude-code: {exc}", file=sys.stderr)
        return 1
    if payload is _TOO_DEEP:
        return _unreadable_input(text, hooks)
    if not isinstance(payload, dict):
        print("otelhooks claude-code: the hook input is not a JSON object", file=sys.stderr)
        return 1
    exporters: list[SpanExporter] = []
    if args.traces_out:
        path = os.fspath(args.traces_out)
        exporters.append(LockedFileExporter(OtlpJsonLinesSpanExporter(path), f"{path}.lock"))
    if _otlp_configured():
        exporters.append(otlp_span_exporter())
    bridge = ClaudeCodeBridge(
        hooks=hooks,
        state=BridgeState(args.state),
        exporters=exporters,
        deny_mode=args.deny_mode,
        service_name=args.service_name,
    )
    try:
        response = bridge.handle(payload)
    except Exception:
        structlog.get_logger("otelhooks").exception("claude-code bridge failed")
        return 1
    finally:
        bridge.close()
    if response.stdout:
        print(response.stdout)
    if response.stderr:
        print(response.stderr, file=sys.stderr)
    return response.exit_code


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    cmd = sub.add_parser(
        "claude-code",
        help="the Claude Code hook bridge: register it for every hook event",
        description="Read one Claude Code hook event on stdin: spans (one trace per session, "
        "one execute_tool span per tool use across processes), otelhooks hooks, and Claude "
        "Code's answer for PreToolUse and UserPromptSubmit.",
    )
    cmd.add_argument(
        "--hooks",
        action="append",
        default=[],
        metavar="PATH",
        help=f"hook config file or folder (repeatable; also ${HOOKS_ENV}, {os.pathsep}-separated)",
    )
    cmd.add_argument(
        "--traces-out",
        default=os.environ.get(TRACES_ENV),
        metavar="PATH",
        help=f"append spans as OTLP JSON lines to PATH (default: ${TRACES_ENV}); the "
        "OTEL_EXPORTER_OTLP_* variables add OTLP export",
    )
    cmd.add_argument(
        "--state",
        metavar="PATH",
        help="the state file shared by hook processes (default: $OTELHOOKS_CLAUDE_STATE or "
        "~/.otelhooks/claude-code.sqlite3)",
    )
    cmd.add_argument(
        "--deny-mode",
        choices=("json", "exit2"),
        default="json",
        help="answer a denial with hookSpecificOutput.permissionDecision JSON (default) or "
        "with exit code 2 and the reason on stderr",
    )
    cmd.add_argument("--service-name", default="claude-code", help="service.name of the spans")
    cmd.set_defaults(func=_claude_code)
