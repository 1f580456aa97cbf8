"""``otelhooks init``: write the commented starter hook file and say what to try next."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from otelhooks._cli._common import Subcommands
from otelhooks._starter import STARTER_FILE_NAME, starter_hooks_yaml

__all__ = ["add_parser"]


def _init(args: argparse.Namespace) -> int:
    path = Path(args.path)
    if path.exists() and not args.force:
        print(f"otelhooks init: {path} already exists; --force overwrites it", file=sys.stderr)
        return 1
    if not path.parent.is_dir():
        print(f"otelhooks init: no such directory: {path.parent.absolute()}", file=sys.stderr)
        return 2
    path.write_text(starter_hooks_yaml(args.path))
    name = args.path
    print(f"""wrote {path.absolute()}: a guard that denies `rm -rf`, an observer that logs tool
calls, a notification webhook (commented out). Try next:
  otelhooks validate {name}
  otelhooks hooks test {name} --event PreToolUse --tool shell/exec --args '{{"cmd": "rm -rf /"}}'
  otelhooks demo --hooks {name}""")
    return 0


def add_parser(sub: Subcommands) -> None:
    init = sub.add_parser(
        "init",
        help="write a commented starter hook file (hooks.yaml) to edit",
        description="Write a commented starter hook file in the current folder: a guard that "
        "denies `rm -rf`, an observer, and a notification webhook left commented out. It "
        "validates as written; edit it, then try it with `otelhooks demo --hooks`.",
    )
    init.add_argument(
        "path",
        nargs="?",
        default=STARTER_FILE_NAME,
        metavar="FILE",
        help=f"where to write it (default: {STARTER_FILE_NAME})",
    )
    init.add_argument("--force", action="store_true", help="overwrite an existing file")
    init.set_defaults(func=_init)
