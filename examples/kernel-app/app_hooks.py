"""The guardrails app's Python hooks (a kernel app's intercept hook returns the data, changed or
not, or None to block)."""

import os
from pathlib import Path

LOG = Path(os.environ.get("TMPDIR", "/tmp")) / "otelhooks-examples.log"


def sign(data):
    """message_sending (intercept): pass the message on, signed."""
    return {"content": f"{data.content}\n-- checked by guardrails"}


def inbox(data):
    """message_received (subscribe): log the channel."""
    with LOG.open("a", encoding="utf-8") as log:
        log.write(f"message received on {data.channelId}\n")
