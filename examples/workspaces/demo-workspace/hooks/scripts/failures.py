"""A workspace ``script`` rule: ``"function": "scripts/failures.py:record"``."""

import os
from pathlib import Path

LOG = Path(os.environ.get("TMPDIR", "/tmp")) / "otelhooks-examples.log"


def record(event):
    """Append the failed tool call to the examples log (PostToolUseFailure)."""
    with LOG.open("a", encoding="utf-8") as log:
        log.write(f"tool failed: {event.identifier}/{event.apiName}: {event.error}\n")
