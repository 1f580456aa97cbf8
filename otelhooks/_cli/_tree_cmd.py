"""``otelhooks tree FILE``: print the trace tree of an OTLP JSON lines file again."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from otelhooks._cli._common import Subcommands

__all__ = ["add_parser"]


def _tree(args: argparse.Namespace) -> int:
    from otelhooks._demo_tree import render_trees
    from otelhooks._export import read_otlp_json_lines

    path = Path(args.path)
    if not path.is_file():
        print(f"otelhooks tree: no such file: {args.path}", file=sys.stderr)
        return 2
    try:
        spans = read_otlp_json_lines(path)
    except ValueError as exc:
        print(f"otelhooks tree: {args.path} is not OTLP JSON lines: {exc}", file=sys.stderr)
        return 2
    print(render_trees(spans))
    print(f"{len(spans)} spans in {path.absolute()}")
    return 0


def add_parser(sub: Subcommands) -> None:
    tree = sub.add_parser(
        "tree",
        help="print the trace tree of an OTLP JSON lines file (e.g. the demo's)",
        description="Read spans written by --traces-out (OTLP JSON lines) and print them as "
        "the demo does: one tree per trace.",
    )
    tree.add_argument("path", metavar="FILE", help="an OTLP JSON lines file")
    tree.set_defaults(func=_tree)
