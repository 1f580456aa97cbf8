"""A lock ``fork`` waits for: one-time setup on our threads that a fork must not cut in half.

A ``fork`` copies every lock as it is, held ones included, into a child that has only the thread
that forked. Setup that runs once per process holds locks no thread of the child will release:
OpenSSL initialising itself in the first TLS context, a module imported for the first time
(importlib's per-module lock). A child forked in that window (an agent starting a worker pool
while our webhook thread makes its first request) waited forever at its own first request: its
queued webhooks stayed leased and undelivered. Such setup runs under :data:`ONCE`, which the
forking thread takes before the fork, so the child starts from the finished setup.

Example:
    >>> with ONCE:
    ...     pass  # a fork of another thread waits here
"""

from __future__ import annotations

import os
import threading

__all__ = ["ONCE"]

# Reentrant: the setup it covers may reach another piece of setup on the same thread.
ONCE = threading.RLock()

if hasattr(os, "register_at_fork"):
    os.register_at_fork(
        before=ONCE.acquire, after_in_parent=ONCE.release, after_in_child=ONCE.release
    )
