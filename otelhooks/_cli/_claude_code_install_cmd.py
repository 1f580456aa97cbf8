"""``otelhooks claude-code install`` and ``uninstall``: write or remove our Claude Code hooks."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from otelhooks.integrations.claude_code import BridgeOptions, SettingsChange

# the same as the installer's (a test checks): importing it here would load the whole bridge
# package for every command line
DEFAULT_HOOKS_FILE = ".claude/otelhooks.yaml"
DEFAULT_TRACES = "~/.otelhooks/claude-code-traces.jsonl"

__all__ = ["add_subcommands", "bridge_options"]


def _how_to_see(http: str | None, hooks_file: str, traces: str | None) -> str:
    if http is None:
        lines = [f"  your hooks: {hooks_file} (check: otelhooks validate {hooks_file})"]
        if traces:
            lines.append(
                f"  traces: {traces}; after a Claude Code session: otelhooks claude-code tree"
            )
        lines.append(
            "  or set OTEL_EXPORTER_OTLP_ENDPOINT in .claude/otelhooks.env (one trace per session)"
        )
        return "\n".join(lines)
    base = http.rstrip("/").removesuffix("/v1/hooks/claude-code")
    return "\n".join(
        [
            f"  run:   OTELHOOKS_ADMIN_TOKEN=... otelhooks serve --hooks {hooks_file} "
            f"--traces-out {DEFAULT_TRACES}",
            "  give Claude Code the ingest token: export OTELHOOKS_INGEST_TOKEN=...",
            "  then: otelhooks claude-code tree (one trace per session); decisions: GET /v1/events",
            "  Claude Code's own telemetry, joined by session and tool_use_id:",
            "    CLAUDE_CODE_ENABLE_TELEMETRY=1 CLAUDE_CODE_ENHANCED_TELEMETRY_BETA=1",
            "    OTEL_LOGS_EXPORTER=otlp OTEL_METRICS_EXPORTER=otlp OTEL_TRACES_EXPORTER=otlp",
            f"    OTEL_EXPORTER_OTLP_ENDPOINT={base} OTEL_EXPORTER_OTLP_PROTOCOL=http/json",
            '    OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer $OTELHOOKS_INGEST_TOKEN"',
        ]
    )


def _report(change: SettingsChange) -> str:
    what = f"{change.path}: {change.verb}"
    if change.added and not change.changed:
        return f"{what} (the otelhooks hooks of {len(change.added)} events are already there)"
    if change.removed and change.added:
        return f"{what} (replaced the otelhooks hooks of {len(change.added)} events)"
    if change.added:
        return f"{what} (otelhooks hooks for {len(change.added)} events)"
    if change.removed:
        return f"{what} (removed the otelhooks hooks of {len(change.removed)} events)"
    return f"{what} (no otelhooks hooks in it)"


def _install(args: argparse.Namespace) -> int:
    from otelhooks.integrations.claude_code import install_project
    from otelhooks.integrations.claude_code._cli_version import skill_shell_warning

    try:
        result = install_project(
            project=args.project,
            user=args.user,
            http=args.http,
            hooks_file=args.hooks_file,
            fail_closed=args.fail_closed,
            traces_out=None if args.no_traces else args.traces_out,
        )
    except (OSError, ValueError) as exc:
        print(f"otelhooks claude-code install: {exc} (nothing was changed)", file=sys.stderr)
        return 1
    for change in result.changes:
        if change.before is None and change.after is None:
            continue  # no file before, none now
        print(_report(change))
    local = [c for c in result.changes if c.path.name == "settings.local.json" and c.after]
    if local and local[0].before is None:
        print(f"  keep {local[0].path} out of git: it names this machine's Python")
    if result.hooks_file is not None and result.hooks_file_verb == "created":
        print(f"{result.hooks_file}: created (a starter hook file: a guard against rm -rf)")
    form = f"http hooks to {args.http}" if args.http else "command hooks"
    print(f"otelhooks {form} for every Claude Code hook event")
    for warning in result.changes[-1].warnings:
        print(f"warning: {warning}", file=sys.stderr)
    # the hooks are written either way (the CLI may be updated later): said, exit unchanged
    older = skill_shell_warning()
    if older is not None:
        print(f"warning: {older}", file=sys.stderr)
    print("how to see it:")
    print(_how_to_see(args.http, args.hooks_file, result.traces))
    return 0


def _uninstall(args: argparse.Namespace) -> int:
    from otelhooks.integrations.claude_code import uninstall_project

    try:
        result = uninstall_project(project=args.project, user=args.user, hooks_file=args.hooks_file)
    except (OSError, ValueError) as exc:
        print(f"otelhooks claude-code uninstall: {exc} (nothing was changed)", file=sys.stderr)
        return 1
    changed = [c for c in result.changes if c.changed]
    for change in changed:
        print(_report(change))
    if result.hooks_file is not None:
        print(f"{result.hooks_file}: deleted (the unchanged starter hook file)")
    if not changed:
        print("no otelhooks hooks found; nothing changed")
    return 0


def bridge_options(args: argparse.Namespace) -> BridgeOptions:
    """The bridge's options as ``otelhooks claude-code``'s arguments give them: the same for
    the one-process hook command and for the daemon its fast client starts."""
    from otelhooks.integrations.claude_code import BridgeOptions

    return BridgeOptions(
        hooks=tuple(args.hooks),
        traces_out=args.traces_out,
        state=args.state,
        export_env=args.export_env,
        deny_mode=args.deny_mode,
        fail_closed=args.fail_closed,
        service_name=args.service_name,
        dialect=args.dialect,
        hook_timeout=args.hook_timeout,
    )


def _daemon(args: argparse.Namespace) -> int:
    from otelhooks._cli._common import exit_on_sigterm, log_to_stderr
    from otelhooks.integrations.coding_agents._daemon import run_daemon

    # the hook client gives the daemon no stdout; its stderr is the daemon's log file
    log_to_stderr()

    options = bridge_options(args)
    with exit_on_sigterm():
        return run_daemon(args.socket, options)


def _tree(args: argparse.Namespace) -> int:
    from otelhooks._demo_tree import render_trees
    from otelhooks._export._otlp_json import read_otlp_json_lines
    from otelhooks.integrations.claude_code import session_trace_id

    path = args.path or os.path.expanduser(DEFAULT_TRACES)
    try:
        spans = read_otlp_json_lines(path)
    except FileNotFoundError:
        hint = "" if args.path else ": `otelhooks claude-code install`, then a Claude Code session"
        print(f"otelhooks claude-code tree: no traces yet at {path}{hint}", file=sys.stderr)
        return 1
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
        "--user",
        action="store_true",
        help="~/.claude/settings.json ($CLAUDE_CONFIG_DIR/settings.json when set) instead of "
        "the project's",
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
        description="Merge one otelhooks hook per Claude Code event: command hooks into "
        ".claude/settings.local.json (they name this machine's Python), or with --http, http "
        "hooks to `otelhooks serve` into the shared .claude/settings.json (~/.claude/"
        "settings.json with --user). Writes a starter hook file when there is none. Hooks that "
        "are not ours are never touched; a file that cannot be edited without loss is refused.",
    )
    _where(install)
    install.add_argument(
        "--http",
        metavar="URL",
        help="the otelhooks serve URL (e.g. http://127.0.0.1:4319): write http hooks",
    )
    install.add_argument(
        "--hooks-file",
        default=DEFAULT_HOOKS_FILE,
        metavar="PATH",
        help=f"the otelhooks hooks the command form runs (default {DEFAULT_HOOKS_FILE}; a "
        "starter file is written there when there is none)",
    )
    install.add_argument(
        "--traces-out",
        default=DEFAULT_TRACES,
        metavar="PATH",
        help=f"command form: where the spans go (default {DEFAULT_TRACES}; "
        "`otelhooks claude-code tree` reads it)",
    )
    install.add_argument(
        "--no-traces", action="store_true", help="command form: record no spans to a file"
    )
    install.add_argument(
        "--fail-closed",
        action="store_true",
        help=(
            "guards fail closed: a failing bridge denies PreToolUse and UserPromptSubmit, and "
            "Claude Code blocks them when the hook gives no answer (onFailure: block)"
        ),
    )
    install.set_defaults(func=_install)
    uninstall = sub.add_parser(
        "uninstall",
        help="remove exactly the otelhooks hooks from Claude Code's settings",
        description="Remove the hooks `install` wrote; every other hook stays.",
    )
    _where(uninstall)
    uninstall.add_argument(
        "--hooks-file",
        default=DEFAULT_HOOKS_FILE,
        metavar="PATH",
        help="the hook file install named: deleted if it is still the unchanged starter",
    )
    uninstall.set_defaults(func=_uninstall)
    tree = sub.add_parser(
        "tree",
        help="print the spans of a traces file as trees, one per Claude Code session",
        description="Print OTLP JSON lines (serve --traces-out, or the bridge's --traces-out) "
        "as trace trees: the hook spans and Claude Code's own spans joined into them.",
    )
    tree.add_argument(
        "path",
        nargs="?",
        metavar="PATH",
        help=f"the OTLP JSON lines file (default {DEFAULT_TRACES}, where install records)",
    )
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
