"""``otelhooks codex`` and ``otelhooks gemini``: the bridge in each CLI's dialect, and
``install`` / ``uninstall`` of its hooks (see ``docs/adapters.md``)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

from otelhooks._cli._common import Subcommands

__all__ = ["add_parser"]

_CLIS = {"codex": "Codex CLI", "gemini": "Gemini CLI"}  # each dialect's display_name
# install's warnings that a guard never runs or a record is lost (the hooks off, a server Codex
# ignores, settings Gemini removes from the hooks' environment)
_LOUD = ("no installed hook will run", "Codex CLI ignores MCP server", "Gemini CLI removes")


def _bridge(args: argparse.Namespace) -> int:
    if sys.stdin.isatty():  # typed in a terminal, it would wait for an event nobody sends
        print(
            f"otelhooks {args.dialect}: {_CLIS[args.dialect]} runs this, one hook event (JSON) "
            f"on stdin; `otelhooks {args.dialect} install` sets it up",
            file=sys.stderr,
        )
        return 2
    from otelhooks.integrations.coding_agents._held_output import hold

    output = hold()  # first: what the process writes comes after its answer, its pipes kept
    from otelhooks._cli._common import log_to_stderr
    from otelhooks.integrations.claude_code import BridgeOptions
    from otelhooks.integrations.coding_agents._one_process import answer_process
    from otelhooks.integrations.coding_agents._run import answer_seconds

    log_to_stderr()
    options = BridgeOptions(
        hooks=tuple(args.hooks),
        traces_out=args.traces_out,
        state=args.state,
        fail_closed=args.fail_closed,
        service_name=args.dialect,
        dialect=args.dialect,
    )
    raw = sys.stdin.buffer.read()
    return answer_process(raw, options, output, answer_s=answer_seconds(os.environ))


def _default_hooks(dialect: str) -> str:
    return f".{dialect}/otelhooks.yaml"


def _install(args: argparse.Namespace) -> int:
    from otelhooks._private_files import private_folder
    from otelhooks._starter import starter_hooks_yaml
    from otelhooks.integrations.coding_agents import install_agent

    hooks_file = args.hooks or _default_hooks(args.dialect)
    traces = None if args.no_traces else args.traces_out
    if traces and traces.startswith("~"):
        private_folder(Path(traces).expanduser().parent)
    try:
        change = install_agent(
            args.dialect,
            project=args.project,
            user=args.user,
            hooks_file=hooks_file,
            traces_out=traces,
            fail_closed=args.fail_closed,
        )
    except (ValueError, OSError) as exc:
        print(f"otelhooks {args.dialect} install: {exc} (nothing was changed)", file=sys.stderr)
        return 1
    print(f"{change.path}: {change.verb} ({', '.join(change.added)})")
    starter = Path(hooks_file).expanduser()
    starter = starter if starter.is_absolute() else Path(args.project) / starter
    if not starter.exists():
        starter.parent.mkdir(parents=True, exist_ok=True)
        starter.write_text(starter_hooks_yaml(hooks_file), encoding="utf-8")
        print(f"{starter}: created (the starter hook file)")
    if traces:
        print(f"  traces: {traces} (one trace per session; `otelhooks claude-code tree` prints it)")
    for warning in change.warnings:
        if warning.startswith(_LOUD):  # guards that never run: said loudly
            print(f"warning: {warning}", file=sys.stderr)
        else:
            print(f"  note: {warning}")
    return 0


def _uninstall(args: argparse.Namespace) -> int:
    from otelhooks.integrations.coding_agents import uninstall_agent

    try:
        change = uninstall_agent(args.dialect, project=args.project, user=args.user)
    except (ValueError, OSError) as exc:
        print(f"otelhooks {args.dialect} uninstall: {exc} (nothing was changed)", file=sys.stderr)
        return 1
    if change.changed:
        print(f"{change.path}: {change.verb} (removed {', '.join(change.removed)})")
    else:
        print("no otelhooks hooks found; nothing changed")
    return 0


def _where(parser: argparse.ArgumentParser, dialect: str) -> None:
    user_file = (
        "$CODEX_HOME/hooks.json"
        if dialect == "codex"
        else "~/.gemini/settings.json ($GEMINI_CLI_HOME/.gemini when set)"
    )
    parser.add_argument("--user", action="store_true", help=f"{user_file} instead of the project's")
    parser.add_argument(
        "--project", default=".", metavar="DIR", help="the project folder (default: .)"
    )


def _add_one(sub: Subcommands, dialect: str) -> None:
    cli = _CLIS[dialect]
    cmd = sub.add_parser(
        dialect,
        help=f"the {cli} hook bridge, and install/uninstall of its hooks",
        description=f"Read one {cli} hook event on stdin and answer it in {cli}'s format "
        "(the one coding-agent bridge, in this CLI's dialect).",
    )
    cmd.add_argument("--hooks", action="append", default=[], metavar="PATH", help="hook file")
    cmd.add_argument("--traces-out", metavar="PATH", help="append spans as OTLP JSON lines")
    cmd.add_argument("--state", metavar="PATH", help="the state file shared by hook processes")
    cmd.add_argument("--fail-closed", action="store_true", help="a failing bridge denies")
    cmd.set_defaults(func=_bridge, dialect=dialect)
    actions = cmd.add_subparsers(dest="action", required=False, metavar="{install,uninstall}")
    target = ".codex/hooks.json" if dialect == "codex" else "the hooks of .gemini/settings.json"
    install = actions.add_parser(
        "install",
        help=f"write otelhooks hooks into {target} (merged, idempotent)",
        description=f"Merge one otelhooks hook per {cli} event into {target}; hooks that are "
        "not ours are never touched. Writes a starter hook file when there is none.",
    )
    _where(install, dialect)
    install.add_argument(
        "--hooks",
        metavar="FILE",
        help=f"the otelhooks hooks to run (default {_default_hooks(dialect)})",
    )
    install.add_argument(
        "--traces-out",
        default=f"~/.otelhooks/{dialect}-traces.jsonl",
        metavar="PATH",
        help="where the spans go",
    )
    install.add_argument("--no-traces", action="store_true", help="record no spans to a file")
    install.add_argument(
        "--fail-closed", action="store_true", help="a failing bridge denies the tool call"
    )
    install.set_defaults(func=_install, dialect=dialect)
    uninstall = actions.add_parser(
        "uninstall",
        help=f"remove exactly the otelhooks hooks from {target}",
        description="Remove the hooks `install` wrote; every other hook stays.",
    )
    _where(uninstall, dialect)
    uninstall.set_defaults(func=_uninstall, dialect=dialect)


def add_parser(sub: Subcommands) -> None:
    for dialect in _CLIS:
        _add_one(sub, dialect)
