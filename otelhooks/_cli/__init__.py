"""The ``otelhooks`` command line: one module per command, registered here."""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence

from otelhooks._cli import (
    _claude_code_cmd,
    _coding_agents_cmd,
    _demo_cmd,
    _events_cmd,
    _hooks_cmd,
    _init_cmd,
    _mcp_cmd,
    _replay_cmd,
    _serve_cmd,
    _store_cmd,
    _tree_cmd,
    _validate_cmd,
)

__all__ = ["build_parser", "help_of", "main"]

# Each command module has add_parser(subparsers); add new commands to this tuple.
COMMANDS = (
    _demo_cmd,
    _init_cmd,
    _events_cmd,
    _serve_cmd,
    _store_cmd,
    _validate_cmd,
    _hooks_cmd,
    _claude_code_cmd,
    _coding_agents_cmd,
    _replay_cmd,
    _tree_cmd,
    _mcp_cmd,
)


def build_parser() -> argparse.ArgumentParser:
    from otelhooks._version import __version__

    parser = argparse.ArgumentParser(
        prog="otelhooks", description="Agent lifecycle hooks as OpenTelemetry span processors."
    )
    parser.add_argument("--version", action="version", version=f"otelhooks {__version__}")
    # Not required: a bare `otelhooks` (or a bare group such as `otelhooks hooks`) prints its
    # help rather than argparse's "the following arguments are required: command".
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    parser.set_defaults(func=help_of(parser))
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def help_of(parser: argparse.ArgumentParser) -> Callable[[argparse.Namespace], int]:
    def show(args: argparse.Namespace) -> int:
        parser.print_help()
        return 0

    return show


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``otelhooks`` console script."""
    args = build_parser().parse_args(argv)
    result: int = args.func(args)
    return result
