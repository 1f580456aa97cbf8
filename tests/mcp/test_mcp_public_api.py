"""``otelhooks.mcp``'s public surface is the intended list, documented, and importing it starts
nothing."""

from __future__ import annotations

import subprocess
import sys

import otelhooks.mcp

INTENDED = {
    "McpGateway", "McpHttpProxy", "McpSession", "Message", "Relay", "UpstreamHeaders", "parse",
    "run_http", "run_stdio", "span_name",
}  # fmt: skip


def test_public_names_are_the_intended_ones() -> None:
    assert set(otelhooks.mcp.__all__) == INTENDED


def test_every_public_object_has_a_docstring() -> None:
    assert [n for n in INTENDED if not getattr(otelhooks.mcp, n).__doc__] == []


def test_importing_the_gateway_starts_no_thread() -> None:
    code = (
        "import threading, otelhooks.mcp;"
        "names = [t.name for t in threading.enumerate()];"
        "assert names == ['MainThread'], names"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
