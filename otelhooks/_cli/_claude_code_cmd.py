"""``otelhooks claude-code``: the Claude Code hook bridge (one hook event per invocation).

Register it for every hook event in ``.claude/settings.json`` (see ``docs/adapters.md``). It
reads the event JSON on stdin, writes Claude Code's answer on stdout (JSON) or stderr (exit 2),
and logs only to stderr. A problem of the bridge itself (bad JSON, a broken hooks file) exits 1,
which Claude Code treats as a non-blocking error: it is shown, and the tool is not stopped.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from otelhooks._cli._common import writable_file_problem
from otelhooks._errors import ConfigError

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export import SpanExporter

    from otelhooks._export._report import DeliveryTracker

__all__ = ["add_parser"]

HOOKS_ENV = "OTELHOOKS_HOOKS"
BRIDGE_SHUTDOWN_TIMEOUT_S = 1.0
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


def _claude_code(args: argparse.Namespace) -> int:
    import structlog

    _log_to_stderr()
    from otelhooks._config import load_config
    from otelhooks._export import OtlpJsonLinesSpanExporter
    from otelhooks._export._otlp import otlp_configured, otlp_span_exporter, summarise_sdk_logs
    from otelhooks._export._report import DeliveryTracker
    from otelhooks._setup import shutdown_timeout
    from otelhooks.integrations.claude_code import BridgeState, ClaudeCodeBridge
    from otelhooks.integrations.claude_code._spans import LockedFileExporter

    try:
        payload: Any = json.loads(sys.stdin.read() or "null")
    except ValueError as exc:
        print(f"otelhooks claude-code: the hook input is not JSON: {exc}", file=sys.stderr)
        return 1
    if not isinstance(payload, dict):
        print("otelhooks claude-code: the hook input is not a JSON object", file=sys.stderr)
        return 1
    try:
        hooks = load_config(_hook_paths(args)).hooks
    except ConfigError as exc:
        print(f"otelhooks claude-code: {exc}", file=sys.stderr)
        return 1
    # Claude Code waits for this process (SessionEnd hooks get 1.5 s): a dead endpoint is
    # given up on at once, a silent one within the deadline.
    timeout_s = shutdown_timeout(BRIDGE_SHUTDOWN_TIMEOUT_S)
    exporters: list[SpanExporter] = []
    if args.traces_out:
        path = os.fspath(args.traces_out)
        problem = writable_file_problem(Path(path).absolute())
        if problem is not None:
            # Exit 1: Claude Code shows it as a non-blocking error, and the tool goes on.
            print(f"otelhooks claude-code: --traces-out {path}: {problem}", file=sys.stderr)
            return 1
        exporters.append(LockedFileExporter(OtlpJsonLinesSpanExporter(path), f"{path}.lock"))
    otlp: DeliveryTracker | None = None
    if otlp_configured():
        summarise_sdk_logs(math.inf)
        otlp = DeliveryTracker("spans", "", fail_fast=True, request_timeout_s=timeout_s)
        exporters.append(_counted(otlp_span_exporter(otlp), otlp))
    bridge = ClaudeCodeBridge(
        hooks=hooks,
        state=BridgeState(args.state),
        exporters=exporters,
        deny_mode=args.deny_mode,
        service_name=args.service_name,
        shutdown_timeout_s=timeout_s,
        fail_fast=True,
    )
    try:
        response = bridge.handle(payload)
    except Exception:
        structlog.get_logger("otelhooks").exception("claude-code bridge failed")
        return 1
    finally:
        delivery = list(bridge.close())
        if otlp is not None:
            delivery.insert(0, otlp.report())
        # Only what went wrong, on stderr: Claude Code shows a hook's stderr to the user.
        for destination in delivery:
            if not destination.ok:
                print(f"otelhooks claude-code: {destination.line()}", file=sys.stderr)
    if response.stdout:
        print(response.stdout)
    if response.stderr:
        print(response.stderr, file=sys.stderr)
    return response.exit_code


def _counted(exporter: SpanExporter, tracker: DeliveryTracker) -> SpanExporter:
    """``exporter`` with every span it is given and accepts counted on ``tracker``."""
    from opentelemetry.sdk.trace.export import SpanExportResult

    export = exporter.export

    def counted(spans: Any) -> SpanExportResult:
        tracker.sent(len(spans))
        result = export(spans)
        if result is SpanExportResult.SUCCESS:
            tracker.delivered(len(spans))
        else:
            tracker.failed(len(spans))
        return result

    exporter.export = counted  # type: ignore[method-assign]
    return exporter


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
