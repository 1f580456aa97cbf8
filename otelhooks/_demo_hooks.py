"""The demo's intercept hooks, which ``demo-hooks.yaml`` (beside this module) names.

They live in a hook file, not in the demo's code, so that the policy the demo ran is a file a
user can read, edit and replay against the demo's recorded spans
(``otelhooks replay otelhooks-demo-traces.jsonl --hooks .../otelhooks/demo-hooks.yaml``).
"""

from __future__ import annotations

import re
from importlib.resources import files
from pathlib import Path
from typing import Any

from otelhooks._events import HookEvent, ToolCallEvent
from otelhooks._hooks import Block

__all__ = ["add_context", "demo_hooks_file", "no_shell", "offline_web", "redact", "sign"]

_SECRET = re.compile(r"(?im)^(.*(password|token|secret)\s*[=:]\s*)\S+")


def demo_hooks_file() -> Path:
    """The path of the demo's hook file (installed with the package)."""
    return Path(str(files("otelhooks") / "demo-hooks.yaml"))


def offline_web(event: ToolCallEvent) -> None:
    """Answer web searches from a canned result: the demo has no network."""
    event.mock({"content": '{"results": ["cached: OpenTelemetry GenAI conventions"]}'})


def no_shell(event: ToolCallEvent) -> Block:
    """Deny every shell command."""
    return Block("shell commands are disabled in the demo")


def add_context(data: HookEvent) -> dict[str, Any]:
    """Ask every agent for a one-paragraph answer."""
    return {"input": f"{getattr(data, 'input', '')} (answer in one paragraph)"}


def redact(data: HookEvent) -> dict[str, Any]:
    """Replace the value of any ``password``/``token``/``secret`` line of a tool result."""
    result = dict(getattr(data, "result", None) or {})
    result["content"] = _SECRET.sub(r"\1[REDACTED]", str(result.get("content", "")))
    return {"result": result}


def sign(data: HookEvent) -> dict[str, Any]:
    """Sign every outgoing message."""
    return {"content": f"{getattr(data, 'content', '')}\n-- sent via otelhooks"}
