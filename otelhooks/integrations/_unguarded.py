"""A tool hook's decision on a call otelhooks cannot stop, said rather than dropped.

A tool the model's provider or the SDK runs itself (a hosted web search, a provider tool in a
LangChain agent) is recorded as an ``execute_tool`` span and its tool hooks run on it, so
observers and audit hooks see it; a deny or a mock of it cannot be enforced, for the call ran
or runs anyway. One rule for every adapter: the span fails with the adapter's own error (its
``error.type`` names where users import it), ``on_tool_call_error`` is told, and a warning line
names the tool and the decision.
"""

from __future__ import annotations

import structlog

from otelhooks._instrument import ToolCall

__all__ = ["not_enforced"]

_log = structlog.get_logger("otelhooks")


def not_enforced(call: ToolCall, error: type[Exception], runs_it: str) -> None:
    """Fail ``call``, whose hooks denied or mocked it, with ``error``: ``runs_it`` (who runs
    the tool instead of otelhooks) is said in the warning and in the error's message."""
    decision = "mocked" if call.mocked else "denied"
    _log.warning(
        "a tool hook decided on a call otelhooks cannot stop: not enforced",
        tool=call.matcher_value,
        decision=decision,
        why=f"{runs_it} runs this tool",
    )
    said = f"a hook {decision} {call.matcher_value!r}, a tool {runs_it} runs: not enforced"
    call.fail(error(said))
