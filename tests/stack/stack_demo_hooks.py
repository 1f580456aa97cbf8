"""Hooks the live stack test adds to ``otelhooks demo --hooks``, so that the metrics the alerts
watch for trouble exist: a hook that fails, one that runs past its timeout, and a control hook
slower than the 1 s latency alert. Imported by the demo process from ``tests/stack``."""

from __future__ import annotations

import time
from typing import Any

HOOKS_YAML = """\
hooks:
  - id: stack-test-fails
    type: afterToolCall
    handler: stack_demo_hooks:fail
  - id: stack-test-hangs
    type: afterCompact
    timeout: 0.05
    handler: stack_demo_hooks:hang
  - id: stack-test-slow-gate
    type: beforeToolCall
    matcher: "/explode$"
    handler: stack_demo_hooks:slow_gate
"""


def fail(event: Any) -> None:
    raise RuntimeError("stack test: this hook always fails")


def hang(event: Any) -> None:
    time.sleep(0.5)  # past its 0.05 s timeout


def slow_gate(event: Any) -> None:
    time.sleep(1.2)  # a control hook over the alert's 1 s p95 (one call: flaky/explode)
