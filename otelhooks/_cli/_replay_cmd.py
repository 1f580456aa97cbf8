"""``otelhooks replay``: what a hook policy would have done to recorded runs (see docs/replay.md).

Exit status: 0 when nothing listed in ``--fail-on`` changed; 1 when something did; 2 when a
recording or a policy file cannot be read, or part of a recording could not be (the report
covers the rest and names each line or frame that was skipped).
"""

from __future__ import annotations

import argparse
import os
import sys

from otelhooks._cli._common import Subcommands, log_to_stderr
from otelhooks._errors import ConfigError

__all__ = ["add_parser"]


def _kinds(text: str) -> list[str]:
    from otelhooks.replay import CHANGES

    kinds = [k.strip() for k in text.split(",") if k.strip()]
    unknown = [k for k in kinds if k not in CHANGES]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown change {', '.join(unknown)} (choose from {', '.join(CHANGES)})"
        )
    return kinds


def _replay(args: argparse.Namespace) -> int:
    import structlog

    # stdout is the report (JSON lines a CI step parses): the policy's hooks log to stderr, and
    # the caller's logging is as it was afterwards (``run_cli`` runs this in its process)
    saved = structlog.get_config()
    log_to_stderr()
    try:
        return _report(args)
    finally:
        structlog.configure(**saved)


def _report(args: argparse.Namespace) -> int:
    from otelhooks.replay import RecordingError, replay

    try:
        report = replay(
            args.recordings,
            args.hooks,
            live_webhooks=args.live_webhooks,
            otlp_out=args.otlp_out,
            pooled=args.pooled,
        )
    except ConfigError as exc:
        print(f"otelhooks replay: {exc}", file=sys.stderr)
        return 2
    except (OSError, RecordingError) as exc:
        print(f"otelhooks replay: {exc}", file=sys.stderr)
        return 2
    try:
        # Line by line: the events listed are read back from the report's spool, never held.
        lines = report.json_lines() if args.format == "json" else report.table_lines()
        for line in lines:
            print(line)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader left (`| head`): the verdict below still decides the exit status.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
    if report.duplicates:
        print(
            f"otelhooks replay: {report.duplicates} duplicate span(s) skipped (the same trace id "
            "and span id read again: a retried export, or recordings that overlap); each span "
            "was replayed once",
            file=sys.stderr,
        )
    if args.otlp_out:
        print(f"annotated spans written as OTLP JSON lines to {args.otlp_out}", file=sys.stderr)
    if report.unreadable.total:
        for problem in report.unreadable:
            print(f"otelhooks replay: could not read {problem}", file=sys.stderr)
        print(
            f"otelhooks replay: {report.unreadable.total} line(s), frame(s) or event(s) could "
            "not be read; the report covers the rest",
            file=sys.stderr,
        )
        return 2
    failed = report.failed(args.fail_on)
    if failed:
        listed = ", ".join(f"{count} {kind}" for kind, count in failed.items())
        print(f"otelhooks replay: the policy changes recorded decisions: {listed}", file=sys.stderr)
        return 1
    return 0


def add_parser(sub: Subcommands) -> None:
    cmd = sub.add_parser(
        "replay",
        help="test a hook policy against recorded agent runs",
        description="Run every recorded intercept event (tool calls, persisted results, "
        "messages, run starts) through the policy's hooks, exactly as live, and report what "
        "would change. Recordings: OTLP JSON lines (--traces-out, the Collector's file "
        "exporter), OTLP protobuf dumps, Claude Code bridge traces.",
    )
    cmd.add_argument("recordings", nargs="+", metavar="RECORDING", help="a recording file")
    cmd.add_argument(
        "--hooks",
        action="extend",
        nargs="+",
        required=True,
        metavar="POLICY",
        help="the policy: hook config files or folders (after the recordings; repeatable)",
    )
    cmd.add_argument(
        "--format",
        choices=("table", "json"),
        default="table",
        help="the report as a table (default) or JSON lines",
    )
    cmd.add_argument(
        "--otlp-out",
        metavar="FILE",
        help="also write the recorded spans annotated with the new decisions (OTLP JSON lines)",
    )
    cmd.add_argument(
        "--fail-on",
        type=_kinds,
        default=[],
        metavar="CHANGES",
        help="exit 1 when any of these changes happens: comma-separated deny, mock, rewrite, "
        "allow (a recorded deny, mock or rewrite no longer happens), error (a hook failed)",
    )
    cmd.add_argument(
        "--live-webhooks",
        action="store_true",
        help="call control webhooks (default: report them as 'would call')",
    )
    cmd.add_argument(
        "--pooled",
        action="store_true",
        help="run Python hooks on the handler pool, cut off at their deadlines as live "
        "(default: on the replay thread, deadlines judged when they return; faster)",
    )
    cmd.set_defaults(func=_replay)
