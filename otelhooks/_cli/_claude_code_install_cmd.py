"""``otelhooks claude-code install`` and ``uninstall``: write or remove our Claude Code hooks."""

from __future__ import annotations

import argparse
import sys

__all__ = ["add_subcommands"]


def _how_to_see(http: str | None, hooks_file: str) -> str:
    if http is None:
        return (
            f"  put your hooks in {hooks_file}; spans: add --traces-out FILE to the commands\n"
            "  or set OTEL_EXPORTER_OTLP_ENDPOINT where Claude Code runs (one trace per session)"
        )
    base = http.rstrip("/").removesuffix("/v1/hooks/claude-code")
    return "\n".join(
        [
            f"  run:   OTELHOOKS_ADMIN_TOKEN=... otelhooks serve --hooks {hooks_file}",
            "  give Claude Code the ingest token: export OTELHOOKS_INGEST_TOKEN=...",
            "  Claude Code's own telemetry, joined by session and tool_use_id:",
            "    CLAUDE_CODE_ENABLE_TELEMETRY=1 CLAUDE_CODE_ENHANCED_TELEMETRY_BETA=1",
            "    OTEL_LOGS_EXPORTER=otlp OTEL_METRICS_EXPORTER=otlp OTEL_TRACES_EXPORTER=otlp",
            f"    OTEL_EXPORTER_OTLP_ENDPOINT={base} OTEL_EXPORTER_OTLP_PROTOCOL=http/json",
            '    OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer $OTELHOOKS_INGEST_TOKEN"',
            "  traces: give `otelhooks serve` an OTEL_EXPORTER_OTLP_ENDPOINT (e.g. Jaeger):",
            "  one trace per session; decisions: GET /v1/events",
        ]
    )


def _install(args: argparse.Namespace) -> int:
    from otelhooks.integrations.claude_code._install import install, settings_path

    path = settings_path(user=args.user, project=args.project)
    try:
        change = install(
            path, http=args.http, hooks_file=args.hooks_file, fail_closed=args.fail_closed
        )
    except (OSError, ValueError) as exc:
        print(f"otelhooks claude-code install: {exc}", file=sys.stderr)
        return 1
    form = f"http hooks to {args.http}" if args.http else "command hooks"
    verb = "updated" if change.changed else "unchanged (already installed)"
    print(f"{path}: {verb}; otelhooks {form} for {len(change.added)} events:")
    print("  " + ", ".join(change.added))
    for warning in change.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    print("how to see it:")
    print(_how_to_see(args.http, args.hooks_file))
    return 0


def _uninstall(args: argparse.Namespace) -> int:
    from otelhooks.integrations.claude_code._install import settings_path, uninstall

    path = settings_path(user=args.user, project=args.project)
    try:
        change = uninstall(path)
    except (OSError, ValueError) as exc:
        print(f"otelhooks claude-code uninstall: {exc}", file=sys.stderr)
        return 1
    if not change.removed:
        print(f"{path}: no otelhooks hooks found; nothing changed")
    else:
        print(f"{path}: removed the otelhooks hooks of {', '.join(change.removed)}")
    return 0


def _daemon(args: argparse.Namespace) -> int:
    from otelhooks.integrations.claude_code import BridgeOptions
    from otelhooks.integrations.claude_code._daemon import run_daemon

    options = BridgeOptions(
        hooks=tuple(args.hooks),
        traces_out=args.traces_out,
        state=args.state,
        export_env=args.export_env,
        deny_mode=args.deny_mode,
        fail_closed=args.fail_closed,
        service_name=args.service_name,
    )
    return run_daemon(args.socket, options)


def _tree(args: argparse.Namespace) -> int:
    from otelhooks._demo_tree import render_trees
    from otelhooks._export._otlp_json import read_otlp_json_lines
    from otelhooks.integrations.claude_code import session_trace_id

    try:
        spans = read_otlp_json_lines(args.path)
    except OSError as exc:
        print(f"otelhooks claude-code tree: {exc}", file=sys.stderr)
        return 1
    if args.session:
        trace = format(session_trace_id(args.session), "032x")
        spans = [s for s in spans if s.get("traceId") == trace]
    print(render_trees(spans))
    return 0


def _where(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--user", action="store_true", help="~/.claude/settings.json instead of the project's"
    )
    parser.add_argument(
        "--project", default=".", metavar="DIR", help="the project folder (default: .)"
    )


def add_subcommands(cmd: argparse.ArgumentParser) -> None:
    """Add ``install`` and ``uninstall`` under ``otelhooks claude-code``."""
    sub = cmd.add_subparsers(dest="action", required=False, metavar="{install,uninstall,tree}")
    install = sub.add_parser(
        "install",
        help="write otelhooks hooks into Claude Code's settings (merged, idempotent)",
        description="Merge one otelhooks hook per Claude Code event into .claude/settings.json "
        "(or ~/.claude/settings.json with --user): http hooks to `otelhooks serve` with --http, "
        "command hooks otherwise. Hooks that are not ours are never touched.",
    )
    _where(install)
    install.add_argument(
        "--http",
        metavar="URL",
        help="the otelhooks serve URL (e.g. http://127.0.0.1:4319): write http hooks",
    )
    install.add_argument(
        "--hooks-file",
        default=".claude/otelhooks.yaml",
        metavar="PATH",
        help="the otelhooks hooks the command form runs (default .claude/otelhooks.yaml)",
    )
    install.add_argument(
        "--fail-closed",
        action="store_true",
        help="command form: a failing bridge denies PreToolUse instead of letting it run",
    )
    install.set_defaults(func=_install)
    uninstall = sub.add_parser(
        "uninstall",
        help="remove exactly the otelhooks hooks from Claude Code's settings",
        description="Remove the hooks `install` wrote; every other hook stays.",
    )
    _where(uninstall)
    uninstall.set_defaults(func=_uninstall)
    tree = sub.add_parser(
        "tree",
        help="print the spans of a traces file as trees, one per Claude Code session",
        description="Print OTLP JSON lines (serve --traces-out, or the bridge's --traces-out) "
        "as trace trees: the hook spans and Claude Code's own spans joined into them.",
    )
    tree.add_argument("path", metavar="PATH", help="the OTLP JSON lines file")
    tree.add_argument("--session", metavar="ID", help="only this Claude Code session")
    tree.set_defaults(func=_tree)
    daemon = sub.add_parser(
        "daemon",
        help="the bridge daemon the fast command form starts by itself (not run by hand)",
        description="Serve the bridge (the options given before `daemon`) on a Unix socket "
        "until idle; started by the hook client that `install` writes.",
    )
    daemon.add_argument("--socket", required=True, metavar="PATH", help="the Unix socket")
    daemon.set_defaults(func=_daemon)
