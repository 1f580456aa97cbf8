"""Script actions of ``hooks.yaml`` (LobeHub handlers, loaded from this file)."""

import os
from pathlib import Path

LOG = Path(os.environ.get("TMPDIR", "/tmp")) / "otelhooks-examples.log"


def offline_search(event):
    """beforeToolCall: answer web searches from a canned result (LobeHub's event.mock)."""
    event.mock({"content": f"(offline) no results for {event.args.get('query')!r}"})


def log_step(event):
    """afterStep: one line per finished step."""
    with LOG.open("a", encoding="utf-8") as log:
        log.write(f"step {event.stepIndex} done\n")
