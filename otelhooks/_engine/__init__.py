"""The hooks engine: matching hooks to lifecycle events and running them, for every caller."""

from otelhooks._engine._engine import HooksEngine
from otelhooks._engine._values import matcher_values

__all__ = ["HooksEngine", "matcher_values"]
