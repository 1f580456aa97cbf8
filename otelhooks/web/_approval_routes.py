"""``/v1/approvals``: the inbox over HTTP, for the page, bots and processes that hold a call.

=====================================  ==========================================================
route                                  who, what
=====================================  ==========================================================
``GET /v1/approvals``                  admin: ``{"pending": [...], "answered": [...],
                                       "refused": {"count", "since_ms", "last_ms"}}`` (calls
                                       refused because the inbox was full); ``?args=0``:
                                       without any card's arguments (the pages' listing)
``POST /v1/approvals/{id}``            admin: ``{"decision": "allow" | "deny", "reason": "...",
                                       "args": {...}, "by": "..."}`` answers one (409 when it
                                       was answered already, 404 when unknown)
``POST /v1/approvals``                 ingest or admin token (bearer only): a process asks; 201
                                       with the approval
``GET /v1/approvals/{id}?wait=S``      ingest or admin: the approval, after up to ``S`` seconds
                                       of waiting for its answer (the default applies at its
                                       deadline); each renews its lease; with ``asker=1`` (its
                                       asker's long-poll) the connection closing before the
                                       answer withdraws it, unless another asker waits on it
``DELETE /v1/approvals/{id}``          ingest or admin (bearer only): its asker stopped waiting;
                                       the approval is denied by ``asker`` unless another asker
                                       waits on it (409 when answered, 202 when still waited
                                       on); ``?polling=1``: a long-poll of the asker's is still
                                       open (a thread it cannot stop), not another asker
=====================================  ==========================================================

A browser answers with its session cookie, a same-origin ``Origin`` and the CSRF token; ``by``
is recorded as given (a chat integration names its user), else ``browser`` or ``api``. A
browser is never an asker: its ``GET /v1/approvals/{id}`` only reads (no lease, no ``asker=1``),
and gets the arguments only when content capture is on, with their own text (``args_text``).

The pages list the inbox without arguments and read each card's once, when it is first drawn
(a pending card's arguments never change): 255 cards of 256 KiB made a listing of 128 MiB,
read again at every change of the inbox while a person aimed at a card.
"""

from __future__ import annotations

import asyncio
import functools
import json
import math
import re
from typing import Any
from urllib.parse import parse_qs

import structlog

from otelhooks._actions._approval_args import ArgsNotShowable, args_text
from otelhooks._actions._approval_inbox import Approval, ApprovalInbox, InboxFull
from otelhooks._eventlog._asgi import Receive, Scope, Send, disconnected, read_body, respond
from otelhooks._store._errors import StoreError
from otelhooks.web._auth import SECURITY_HEADERS, WebAuth

__all__ = ["ApprovalRoutes", "wait_seconds"]

_log = structlog.get_logger("otelhooks")

_ONE = re.compile(r"^/v1/approvals/([0-9a-f]{32})$")
_MAX_BODY = 256 * 1024  # one call's arguments; 256 waiting calls at most (the inbox's bound)
_MAX_TEXT = 1000
_MAX_WAITERS = 256
_HEX = re.compile(r"^[0-9a-f]*$")


async def _json(send: Send, status: int, body: Any) -> None:
    data = json.dumps(body, separators=(",", ":"), default=str).encode()
    await respond(send, status, data, b"application/json", SECURITY_HEADERS)


def _hex(value: Any, width: int) -> str:
    """A span or trace id as sent, or "" when it is not ``width`` lowercase hex digits."""
    text = value if isinstance(value, str) else ""
    return text if len(text) == width and _HEX.match(text) else ""


def wait_seconds(raw: str | None, default: float) -> float:
    """A long-poll's wait from its query parameter, within 0-60 s.

    Raises:
        ValueError: not a number, or not a finite one (``float`` reads ``nan``, which no bound
            holds: a NaN wait never ends).
    """
    value = float(raw or default)
    if not math.isfinite(value):
        raise ValueError(f"not a finite number of seconds: {raw!r}")
    return min(max(value, 0.0), 60.0)


def _text(value: Any, default: str = "") -> str:
    return str(value)[:_MAX_TEXT] if isinstance(value, (str, int, float)) else default


class ApprovalRoutes:
    """The ASGI handler of ``/v1/approvals`` and ``/v1/approvals/{id}``."""

    def __init__(self, inbox: ApprovalInbox, auth: WebAuth, *, capture_content: bool) -> None:
        self.inbox = inbox
        self.auth = auth
        self.capture_content = capture_content
        self.waiting = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        path, method = scope["path"], scope["method"]
        caller = self.auth.caller(scope)
        if caller is None:
            await _json(send, 401, {"error": "unauthorized", "message": "a token is required"})
            return
        match = _ONE.match(path)
        if path == "/v1/approvals" and method == "GET" and caller.admin:
            bare = b"args=0" in scope.get("query_string", b"").split(b"&")
            listing = functools.partial(self._listing, args=not bare)
            await _json(send, 200, await self.inbox.call(listing))
        elif path == "/v1/approvals" and method == "POST" and caller.how == "bearer":
            await self._create(receive, send)
        elif match is not None and method == "GET":
            await self._one(match.group(1), scope, receive, send, asker=caller.how == "bearer")
        elif match is not None and method == "DELETE" and caller.how == "bearer":
            polling = b"polling=1" in scope.get("query_string", b"").split(b"&")
            await self._withdraw(match.group(1), send, polling=polling)
        elif match is not None and method == "POST" and caller.admin:
            if not self.auth.allows_change(scope, caller):
                message = self.auth.refusal(scope, "CSRF check failed")
                await _json(send, 403, {"error": "forbidden", "message": message})
                return
            await self._answer(match.group(1), receive, send, caller.how)
        elif match is None and path != "/v1/approvals":
            await _json(send, 404, {"error": "not_found"})
        else:
            await _json(send, 403, {"error": "forbidden", "message": "not with this token"})

    def _listing(self, *, args: bool = True) -> dict[str, Any]:
        content = self.capture_content and args
        # one read of the inbox (ApprovalInbox.listing): the list and its version read apart
        # let a call asked between them count in a version the page then took as shown
        listed = self.inbox.listing()
        return {
            "capture_content": self.capture_content,
            "version": listed.version,
            "refused": {
                "count": listed.refused,
                "since_ms": listed.refused_since_ms,
                "last_ms": listed.refused_last_ms,
            },
            # a browser reads each number as a double: the page shows the arguments' own text
            "pending": [
                {**self._shown(a, content), "args_text": args_text(a.args) if content else None}
                for a in listed.pending
            ],
            "answered": [self._shown(a, content) for a in listed.answered],
        }

    def _shown(self, item: Approval, content: bool) -> dict[str, Any]:
        # the time left by the deadline's clock (a fleet's is the database's, not this host's)
        return item.to_json(content=content, now_ms=self.inbox.now_ms())

    async def _body(self, receive: Receive, send: Send) -> dict[str, Any] | None:
        raw = await read_body(receive, _MAX_BODY)
        try:
            body = json.loads(raw or b"")
        except ValueError:
            body = None
        if not isinstance(body, dict):
            await _json(send, 400, {"error": "bad_request", "message": "a JSON object is expected"})
            return None
        return body

    async def _create(self, receive: Receive, send: Send) -> None:
        body = await self._body(receive, send)
        if body is None:
            return
        default = body.get("default")
        timeout = body.get("timeout_s")
        args = body.get("args", {})
        if (
            default not in ("allow", "deny")
            or not isinstance(timeout, (int, float))
            or not 0 < timeout <= 3600
            or not isinstance(args, dict)
        ):
            message = "default (allow|deny), timeout_s (0-3600] and args (object) are required"
            await _json(send, 400, {"error": "bad_request", "message": message})
            return
        try:
            item = await self.inbox.call(
                functools.partial(
                    self.inbox.request,
                    hook_id=_text(body.get("hook_id"), "?"),
                    event=_text(body.get("event"), "before_tool_call"),
                    tool=_text(body.get("tool")),
                    timeout_s=float(timeout),
                    default=default,
                    args=args,
                    reason=_text(body.get("reason")),
                    agent=_text(body.get("agent")),
                    session=_text(body.get("session")),
                    user=_text(body.get("user")),
                    trace_id=_hex(body.get("trace_id"), 32),
                    span_id=_hex(body.get("span_id"), 16),
                    editable=body.get("editable") is True,
                    call=_text(body.get("call")),
                )
            )
        except InboxFull as exc:
            await _json(send, 503, {"error": "inbox_full", "message": str(exc)})
            return
        except ArgsNotShowable as exc:  # the page could not show the card (nor any other)
            await _json(send, 400, {"error": "bad_request", "message": str(exc)})
            return
        await _json(send, 201, self._shown(item, True))

    async def _one(
        self, approval_id: str, scope: Scope, receive: Receive, send: Send, *, asker: bool
    ) -> None:
        """The approval, after its ``wait``. Only an ``asker`` (a bearer token's) holds it:
        a browser's look, whatever it asks, never renews a lease nor withdraws the card (a GET
        that a page elsewhere can make with the person's cookie changes nothing)."""
        item = await self.inbox.call(self.inbox.get, approval_id)
        if item is None:
            await _json(send, 404, {"error": "not_found"})
            return
        if item.state == "pending" and self.inbox.seconds_left(item) <= 0:
            # an asker that only looks (no room for its long-poll) gets the default at the deadline
            await self.inbox.call(self.inbox.expire, item.id)
        query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
        try:
            wait = wait_seconds(query.get("wait", ["0"])[0], 0.0)
        except ValueError:
            wait = 0.0
        leaving = asker and query.get("asker") == ["1"]  # its closing withdraws the approval
        # every look of a bearer's at a card is its asker's (the page lists them all): it
        # renews the lease
        if asker:
            await self.inbox.call(self.inbox.hold, item.id)
        gone = False
        try:
            if wait and item.state == "pending":
                if self.waiting >= _MAX_WAITERS:
                    await _json(send, 503, {"error": "too_many_waiters"})
                    return
                self.waiting += 1
                answered = asyncio.ensure_future(
                    asyncio.wait_for(_answered(self.inbox, item, wait), wait + 1)
                )
                waits = {answered, asyncio.ensure_future(disconnected(receive))}
                try:
                    await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
                finally:
                    self.waiting -= 1
                    for task in waits:
                        task.cancel()
                if not answered.done():
                    # the asker went away mid-poll (killed: its socket closed; alive, it
                    # withdraws and never polls again either): with ``asker=1`` the card goes
                    # unless another asker of the same call waits on it; else its lease runs
                    gone = leaving
                    return
                answered.result()
        finally:
            release = functools.partial(self.inbox.release, item.id, gone=gone)
            try:
                if asker:
                    await self.inbox.call(release)
            except StoreError as exc:
                # the answer polled for still goes out; the hold stays counted, so the card is
                # never withdrawn under a live asker (on a fleet it lapses a lease later unless
                # that asker looks again, which it does while it lives)
                _log.warning("approval hold not released", approval=item.id, error=str(exc))
        # the asker gets the edited arguments whatever the display rule: they are its answer;
        # a browser (the inbox drawing a card) only what the display rule shows, and the
        # arguments' own text (a browser reads each number as a double)
        content = asker or self.capture_content
        shown = self._shown(item, content)
        if content and not asker:
            shown["args_text"] = args_text(item.args)
        await _json(send, 200, shown)

    async def _withdraw(self, approval_id: str, send: Send, *, polling: bool) -> None:
        """The asker stopped waiting (:meth:`ApprovalInbox.withdraw`)."""
        withdraw = functools.partial(self.inbox.withdraw, approval_id, polling=polling)
        item = await self.inbox.call(withdraw)
        if item is None:
            known = await self.inbox.call(self.inbox.get, approval_id)
            if known is not None and known.state == "pending":  # another asker waits on it
                await _json(send, 202, self._shown(known, self.capture_content))
                return
            await self._not_answered(approval_id, send)
            return
        await _json(send, 200, self._shown(item, self.capture_content))

    async def _not_answered(self, approval_id: str, send: Send) -> None:
        known = await self.inbox.call(self.inbox.get, approval_id)
        if known is None:
            await _json(send, 404, {"error": "not_found"})
        else:  # the page shows the message: whose answer stands (``timeout``: the default)
            given = f"answered already: {known.decision} by {known.answered_by}"
            await _json(send, 409, {"error": "answered", "message": given})

    async def _answer(self, approval_id: str, receive: Receive, send: Send, how: str) -> None:
        body = await self._body(receive, send)
        if body is None:
            return
        decision = body.get("decision")
        args = body.get("args")
        if decision not in ("allow", "deny") or (args is not None and not isinstance(args, dict)):
            message = 'decision must be "allow" or "deny"; args, when given, an object'
            await _json(send, 400, {"error": "bad_request", "message": message})
            return
        if args is not None and not self.capture_content:
            args = None  # arguments the person could not see are not theirs to edit
        by = _text(body.get("by")) or ("browser" if how == "cookie" else "api")
        answer = functools.partial(
            self.inbox.answer,
            approval_id,
            decision,
            by=by,
            reason=_text(body.get("reason")),
            args=args,
        )
        try:
            item = await self.inbox.call(answer)
        except ArgsNotShowable as exc:
            await _json(send, 400, {"error": "bad_request", "message": str(exc)})
            return
        if item is None:
            await self._not_answered(approval_id, send)
            return
        await _json(send, 200, self._shown(item, self.capture_content))


async def _answered(inbox: ApprovalInbox, item: Any, wait: float) -> None:
    """Wait up to ``wait`` seconds for ``item``'s answer; its deadline applies the default (by
    the inbox's clock: a shared inbox's is the database's, which may say "not yet")."""
    loop = asyncio.get_running_loop()
    end = loop.time() + wait
    while item.state == "pending":
        waited = end - loop.time()
        if waited <= 0:
            return
        left = min(waited, inbox.seconds_left(item))
        if left <= 0:
            await inbox.call(inbox.expire, item.id)
            if item.state == "pending":
                await asyncio.sleep(0.05)
            continue
        woken = inbox.signal.arm()
        if item.state != "pending":
            return
        try:
            await asyncio.wait_for(woken.wait(), min(left, inbox.recheck_s))
        except TimeoutError:
            if inbox.seconds_left(item) > 0:
                await inbox.call(inbox.recheck)
