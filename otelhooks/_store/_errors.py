"""The store's errors, in a module of their own (the HTTP layer and the stores both use them).

Errors name the store (its URL without a password), so an operator reading a log line knows
which database it is about. :class:`StoreUnavailable` means "cannot commit right now": the
HTTP layer answers ``503`` with ``Retry-After`` and the client retries. :class:`StoreBusy`, one
of them, is about one change only (its lock wait or its statement past the timeout): the store
itself answers, so what skips the store while it is unavailable does not skip it for that.
"""

from __future__ import annotations

__all__ = ["StoreBusy", "StoreError", "StoreUnavailable", "error_reason"]


class StoreError(Exception):
    """The store failed (or is misconfigured). ``store`` is its password-free name."""

    def __init__(self, store: str, message: str) -> None:
        super().__init__(f"store {store}: {message}")
        self.store = store


class StoreUnavailable(StoreError):
    """The store cannot commit right now (down, restarting, failing over); retry later.

    Attributes:
        retry_after_s: what ``Retry-After`` says.
    """

    retry_after_s = 1


class StoreBusy(StoreUnavailable):
    """This change waited past the store's timeouts (a lock another transaction holds, a slow
    statement), or lost a deadlock: retry it. The store itself answers, so every other change
    still goes to it: an agent that makes its own session's changes wait must not turn the
    store off for every session (their budget guards read it). Also a wait for one of serve's
    own pooled connections while all of them are in use: serve is saturated, the store is not
    down."""


def error_reason(exc: StoreError) -> str:
    """The ``error`` of an HTTP answer about ``exc``: an operator tells serve's saturation or one
    change's wait (``store_busy``) from the store down (``store_unavailable``)."""
    if isinstance(exc, StoreBusy):
        return "store_busy"
    return "store_unavailable" if isinstance(exc, StoreUnavailable) else "store_error"
