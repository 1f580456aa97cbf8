"""A plugin publishing the ``echo_audit`` hook (see its ``.dist-info/entry_points.txt``)."""

import os
from pathlib import Path

LOG = Path(os.environ.get("TMPDIR", "/tmp")) / "otelhooks-examples.log"


def echo_audit(event):
    """Log the end of every run (the agent OS's after_loop)."""
    with LOG.open("a", encoding="utf-8") as log:
        log.write(f"echo_audit: {event.agentId} finished: {event.reason}\n")
