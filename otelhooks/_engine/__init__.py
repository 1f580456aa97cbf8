"""The hooks engine: matching hooks to lifecycle events and running them, for every caller."""

from otelhooks._dispatch import NO_EVENTS, Hooked
from otelhooks._engine._engine import HooksEngine, dry_run_if_hooked
from otelhooks._engine._values import matcher_values, tool_values

__all__ = [
    "NO_EVENTS",
    "Hooked",
    "HooksEngine",
    "dry_run_if_hooked",
    "matcher_values",
    "tool_values",
]
