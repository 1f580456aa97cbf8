"""The names otelhooks writes: span, attribute, span event and metric names, one constant each.

What ``docs/semconv.md`` describes, as constants to read exported telemetry by: the GenAI
semantic conventions' names (``GEN_AI_TOOL_NAME``, ``OP_EXECUTE_TOOL``, ...) and otelhooks' own
under the ``otelhooks.`` namespace (``HOOK_DECISION``, ``METRIC_HOOK_INVOCATIONS``, ...).
``SCHEMA_URL`` is the schema every otelhooks instrumentation scope carries.

Example:
    >>> from otelhooks import Block, semconv
    >>> from otelhooks.testing import pipeline
    >>> guard = {"id": "no-rm", "type": "beforeToolCall", "matcher": "rm",
    ...          "handler": lambda event: Block("rm is not allowed")}
    >>> with pipeline(hooks=[guard]) as pipe:
    ...     with pipe.oh.operation("helper") as op, op.step() as step:
    ...         _ = step.run_tool("", "rm", {"path": "/"}, lambda path: "removed")
    ...     attributes = pipe.spans("execute_tool rm")[0].attributes
    >>> attributes[semconv.GEN_AI_TOOL_NAME], attributes[semconv.HOOK_DECISION]
    ('rm', 'deny')
"""

from __future__ import annotations

from otelhooks import _semconv
from otelhooks._semconv import *  # noqa: F403 - every name is one; _semconv defines them once

# Every upper-case name: a name added to _semconv is public here without a second list to keep.
__all__ = sorted(name for name in vars(_semconv) if name.isupper())
