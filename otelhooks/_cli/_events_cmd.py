"""``otelhooks events``: the lifecycle event table as Markdown."""

from __future__ import annotations

import argparse

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


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    events = sub.add_parser("events", help="print the lifecycle event table (Markdown)")
    events.set_defaults(func=_events)
