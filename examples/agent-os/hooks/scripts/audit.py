"""The ``os-audit`` script hook: functions named after the points of its ``on`` list."""

import os
from pathlib import Path

LOG = Path(os.environ.get("TMPDIR", "/tmp")) / "otelhooks-examples.log"


def _write(line):
    with LOG.open("a", encoding="utf-8") as log:
        log.write(line + "\n")


def after_tool_result(event):
    """A tool returned (the agent OS's after_tool_result)."""
    _write(f"os-audit: {event.apiName} success={event.success}")


def on_error(event):
    """The run failed."""
    _write(f"os-audit: run failed: {event.errorMessage}")
