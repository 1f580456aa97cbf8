"""``otelhooks events``: the lifecycle event table as Markdown."""

from __future__ import annotations

import argparse

from otelhooks._cli._common import Subcommands

__all__ = ["add_parser"]


def _events(_: argparse.Namespace) -> int:
    from otelhooks._events import EVENTS

    print("| canonical | intercept | aliases | OTel shape |")
    print("| --- | --- | --- | --- |")
    for spec in EVENTS.values():
        aliases = ", ".join(
            f"`{a}` ({d.value})" for d, names in spec.aliases.items() for a in names
        )
        print(f"| `{spec.name}` | {'yes' if spec.intercept else ''} | {aliases} | {spec.otel} |")
    return 0


def add_parser(sub: Subcommands) -> None:
    events = sub.add_parser(
        "events",
        help="print the lifecycle event table (Markdown)",
        description="Print every lifecycle event as a Markdown table: its canonical name, "
        "whether an intercept hook can change or stop it, its names in the four dialects "
        "(LobeHub, the kernel app manifest, the agent-OS event log, Claude Code and the "
        "workspace engine), and the span or span event it becomes. A hook's `type` may be "
        "any of these names.",
    )
    events.set_defaults(func=_events)
