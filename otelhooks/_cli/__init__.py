"""The ``otelhooks`` command line: one module per command, registered here."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from otelhooks._cli import (
    _claude_code_cmd,
    _demo_cmd,
    _events_cmd,
    _hooks_cmd,
    _mcp_cmd,
    _serve_cmd,
    _validate_cmd,
)

__all__ = ["build_parser", "main"]

# Each command module has add_parser(subparsers); add new commands to this tuple.
COMMANDS = (
    _demo_cmd,
    _events_cmd,
    _serve_cmd,
    _validate_cmd,
    _hooks_cmd,
    _claude_code_cmd,
    _mcp_cmd,
)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="otelhooks", description="Agent lifecycle hooks as OpenTelemetry span processors."
    )
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``otelhooks`` console script."""
    args = build_parser().parse_args(argv)
    result: int = args.func(args)
    return result
