"""A hook command that keeps what the CLI sent it: ``python -m tests.coding_agents_cli._capture
FILE`` appends its stdin (one hook input, JSON) to FILE as one line and answers nothing."""

from __future__ import annotations

import json
import sys

__all__ = ["main"]


def main(path: str) -> int:
    event = json.loads(sys.stdin.read())
    with open(path, "a", encoding="utf-8") as out:
        out.write(json.dumps(event) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
