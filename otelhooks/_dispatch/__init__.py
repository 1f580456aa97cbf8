"""Hook registration, matching and dispatch."""

from otelhooks._dispatch._chain import DEFAULT_BLOCK_REASONS, InterceptChain
from otelhooks._dispatch._dispatcher import Dispatcher
from otelhooks._dispatch._registry import NO_EVENTS, Hooked, HookRegistry

__all__ = [
    "DEFAULT_BLOCK_REASONS",
    "NO_EVENTS",
    "Dispatcher",
    "HookRegistry",
    "Hooked",
    "InterceptChain",
]
