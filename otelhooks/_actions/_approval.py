"""The ``approval`` action kind: an intercept that waits for a person.

.. code-block:: yaml

    - id: ask-before-shell
      type: before_tool_call
      matcher: Bash
      approval:
        timeout: 120        # seconds a person has to answer
        default: deny       # what applies when nobody answered in time (allow | deny)
        reason: a person approves shell commands   # optional; shown, and the deny reason
        # url: http://127.0.0.1:4318   # a serve to ask (else OTELHOOKS_APPROVALS_URL, else
        #                              # this process's own inbox, which serve serves)

Each call puts an :class:`~otelhooks._actions._approval_inbox.Approval` in an inbox and waits:
in this process's inbox (what ``otelhooks serve`` lists at ``/approvals``: Claude Code's hook
route and the instrumentation of serve's own process), or, with a ``url``, in the inbox of the
``serve`` there, reached with ``POST /v1/approvals`` (bearer: ``OTELHOOKS_INGEST_TOKEN``, else
``OTELHOOKS_ADMIN_TOKEN``, or the variable named by ``token_env``) and long-polls of
``GET /v1/approvals/{id}?wait=S``.

It holds the intercept events ``before_tool_call``, ``before_agent_start``, ``message_sending``
and ``before_human_intervention`` (LobeHub's ``beforeHumanIntervention``, Claude Code's
``PermissionRequest``).

The answer is the handler return protocol: allow returns the payload (with the person's edited
arguments when given: a rewrite), deny returns :class:`~otelhooks.Block` with the person's
reason (else the configured one). Both come wrapped in :class:`~otelhooks._live.Answered`
with an :class:`~otelhooks._live.ApprovalNote` (who answered, when, what): the dispatcher keeps
the note in ``Verdict.approvals``, and the owner of the call's span writes it there as an
``approve`` / ``reject`` span event. A failure to ask (the inbox is full, serve cannot be reached)
blocks: the hook's ``on_error`` is ``block`` whatever the hook says, since a person who was never
asked did not approve. An asker that stops waiting (interrupted, cancelled, giving up) withdraws
its approval (:meth:`ApprovalInbox.withdraw`; ``DELETE /v1/approvals/{id}`` from afar): its call
is blocked, so no person should approve it. Its long-polls carry ``asker=1``: killed outright, it
sends nothing, but serve withdraws the approval when the long-poll's connection closes. A card
several askers wait on (one call, one card: a retry) goes when the last of them is gone, and a
card none of them waited on or looked at for ``LEASE_S`` goes too (killed between two polls).
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Iterable, Mapping
from functools import partial
from typing import Any, Literal

import httpx
import structlog
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from otelhooks._actions._approval_args import ArgsNotShowable
from otelhooks._actions._approval_inbox import (
    CLIENT_GONE,
    WITHDRAWN,
    Approval,
    ApprovalInbox,
    InboxFull,
    process_inbox,
)
from otelhooks._actions._asker import Asker
from otelhooks._errors import ConfigError, HookError
from otelhooks._events import (
    BeforeAgentStartEvent,
    BeforeHumanInterventionEvent,
    HookEvent,
    MessageSendingEvent,
    ToolCallEvent,
)
from otelhooks._hooks import Block, Hook
from otelhooks._live import Answered, ApprovalNote
from otelhooks._loopback import trust_env_for
from otelhooks._redact import register_secret
from otelhooks._tls import tls_context

__all__ = [
    "APPROVALS_URL_ENV",
    "UNSERVED_BLOCKS",
    "ApprovalAction",
    "ApprovalConfig",
    "add_export_tokens",
    "longest_approval_of",
]

APPROVALS_URL_ENV = "OTELHOOKS_APPROVALS_URL"
# Set in a CLI's hook process (the bridge, one process or its daemon), whose inbox nobody ever
# lists: an approval without a serve to ask is a failure to ask, blocked at once, not a wait for
# its default. Gemini CLI removes OTELHOOKS_APPROVALS_URL from hooks' environment under its
# redaction; a `default: allow` then let the call run after the timeout, nobody ever asked.
UNSERVED_BLOCKS = threading.Event()
# An approval's token_env read from the export file (otelhooks.env) by a CLI's hook process:
# Gemini CLI removes *TOKEN* variables from hooks' environment, and the file's value is this
# approval's alone, never put in the environment other hooks run with.
_EXPORT_TOKENS: dict[str, str] = {}
_log = structlog.get_logger("otelhooks")
_POLL_S = 25.0  # one long-poll; shorter than proxies' idle timeouts
# serve holds at most 256 long-polls, and anything holding the ingest token can take them all:
# an asker refused one looks once a second instead of giving up (its call would be blocked while
# the person, who still sees the card, approved it)
_LOOK_S = 1.0
_EVENTS = (
    "before_tool_call",
    "before_agent_start",
    "message_sending",
    "before_human_intervention",
)


class ApprovalConfig(BaseModel):
    """The ``approval:`` mapping of a hook."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    timeout: float = Field(gt=0, le=3600)
    default: Literal["allow", "deny"]
    reason: str | None = None
    url: str | None = None
    token_env: str | None = None


def _tool(payload: HookEvent) -> str:
    if isinstance(payload, BeforeHumanInterventionEvent) and payload.pendingTools:
        return ", ".join(
            f"{t.identifier}/{t.apiName}" if t.identifier else t.apiName
            for t in payload.pendingTools
        )
    identifier = str(getattr(payload, "identifier", "") or "")
    api = str(getattr(payload, "apiName", "") or "")
    return f"{identifier}/{api}" if identifier and identifier != api else api or payload.event


class ApprovalAction:
    """Holds the call until a person answers (see the module docstring)."""

    kind = "approval"
    is_async = False
    concurrent = False
    hands_payload = False  # otelhooks' own code reads the payload; it never changes it
    self_bounded = True  # waits on its own deadline, in the inbox or on serve's long-poll
    on_error = "block"

    def __init__(self, hook_id: str, event: str, raw: Any) -> None:
        try:
            config = raw if isinstance(raw, ApprovalConfig) else ApprovalConfig.model_validate(raw)
        except ValidationError as exc:
            first = exc.errors()[0]
            loc = ".".join(str(x) for x in first["loc"])
            raise ConfigError(
                first["msg"], field=f"approval.{loc}" if loc else "approval"
            ) from None
        if event not in _EVENTS:
            raise ConfigError(
                f"approval hooks hold a call, so they run on {', '.join(_EVENTS)}, not {event}",
                field="type",
            )
        self.hook_id = hook_id
        self.config = config
        self.deadline_s = config.timeout + 10.0  # the approval's own deadline comes first
        self._inbox: ApprovalInbox | None = None

    def use_inbox(self, inbox: ApprovalInbox) -> None:
        """Ask in ``inbox`` instead of this process's own (``serve`` on a shared store gives
        its hooks the inbox every instance lists). A ``url`` still wins: that serve is asked."""
        self._inbox = inbox

    @property
    def url(self) -> str | None:
        """The serve asked, or ``None`` for this process's inbox."""
        return self.config.url or os.environ.get(APPROVALS_URL_ENV) or None

    def _request(self, payload: HookEvent) -> dict[str, Any]:
        args = _args(payload)
        return {
            "hook_id": self.hook_id,
            "event": payload.event,
            "tool": _tool(payload),
            "args": _asked(payload) if args is None else args,
            "agent": str(getattr(payload, "agentId", "") or ""),
            "session": payload.sessionKey or "",
            "user": payload.userId or "",
            "trace_id": payload.traceId or "",
            "span_id": payload.spanId or "",
            "timeout_s": self.config.timeout,
            "default": self.config.default,
            "reason": self.config.reason or "",
            "editable": isinstance(payload, ToolCallEvent) or args is not None,
            "call": _call(payload),
        }

    def _result(self, payload: HookEvent, answer: dict[str, Any]) -> Answered:
        """The handler result of ``answer``, with the note of who answered, when and what."""
        edited = answer.get("answer_args")
        allowed = answer.get("decision") == "allow"
        note = ApprovalNote(
            hook_id=self.hook_id,
            approval_id=str(answer.get("id") or ""),
            tool=str(answer.get("tool") or _tool(payload)),
            decision="allow" if allowed else "deny",
            answered_by=str(answer.get("answered_by") or ""),
            answered_ms=int(answer.get("answered_ms") or time.time_ns() // 1_000_000),
            reason=str(answer.get("answer_reason") or ""),
            args=edited if allowed and isinstance(edited, dict) else None,
        )
        return Answered(self._decided(payload, answer), note)

    def _decided(self, payload: HookEvent, answer: dict[str, Any]) -> Any:
        if answer.get("decision") == "allow":
            edited = answer.get("answer_args")
            if isinstance(edited, dict) and isinstance(payload, ToolCallEvent):
                return {"args": edited}
            return payload  # edited arguments of another event travel in the note
        reason = answer.get("answer_reason") or ""
        if answer.get("answered_by") == "timeout" or not reason:
            reason = self.config.reason or "not approved"
            if answer.get("answered_by") == "timeout":
                reason = f"{reason} (no answer within {self.config.timeout:g}s)"
        return Block(f"{reason} [denied by {answer.get('answered_by') or 'a person'}]")

    # -- in this process ----------------------------------------------------------------------

    def _local(self, payload: HookEvent) -> Approval:
        inbox = self._inbox or process_inbox()
        if not inbox.served and UNSERVED_BLOCKS.is_set():
            raise HookError(
                "cannot ask a person: no serve to ask (set the hook's approval.url, or "
                f"{APPROVALS_URL_ENV} in otelhooks.env beside the hooks file: a CLI may remove "
                "variables from a hook's environment) and this hook process lists no approvals",
                hook_id=self.hook_id,
                event=payload.event,
            )
        if not inbox.served:
            # nobody can answer: the call waits its whole timeout for the default
            _log.warning(
                "no otelhooks serve in this process lists approvals: set the hook's approval.url "
                f"(or {APPROVALS_URL_ENV}) to a serve; the default applies at the timeout",
                hook_id=self.hook_id,
                default=self.config.default,
            )
        try:
            return inbox.request(**self._request(payload))
        except (InboxFull, ArgsNotShowable) as exc:
            raise HookError(str(exc), hook_id=self.hook_id, event=payload.event) from None

    def __call__(self, payload: HookEvent) -> Any:
        """Ask and wait on this thread (at most ``timeout``)."""
        url = self.url
        if url is None:
            inbox = self._inbox or process_inbox()
            item = self._local(payload)
            hold = _Hold(inbox, item.id)
            try:
                with Asker.holding(partial(hold.end, CLIENT_GONE)):
                    inbox.wait(item)
            except BaseException:  # interrupted: nobody waits for this answer any more
                hold.end(WITHDRAWN)
                raise
            finally:
                hold.end()
            return self._result(payload, item.to_json())
        return self._result(payload, self._remote_sync(url, payload))

    async def acall(self, payload: HookEvent) -> Any:
        """Ask and await the answer: no thread waits."""
        url = self.url
        if url is None:
            inbox = self._inbox or process_inbox()
            item = await inbox.call(self._local, payload)
            hold = await inbox.call(_Hold, inbox, item.id)
            try:
                with Asker.holding(partial(hold.end, CLIENT_GONE)):
                    await inbox.await_answer(item)
            except BaseException:  # cancelled: withdrawn on a thread, the caller waits no more
                asyncio.get_running_loop().run_in_executor(None, hold.end, WITHDRAWN)
                raise
            await inbox.call(hold.end)
            return self._result(payload, item.to_json())
        return self._result(payload, await self._remote_async(url, payload))

    # -- through a serve ----------------------------------------------------------------------

    def _headers(self) -> dict[str, str]:
        names = [self.config.token_env] if self.config.token_env else []
        names += ["OTELHOOKS_INGEST_TOKEN", "OTELHOOKS_ADMIN_TOKEN"]
        token = next((v for n in names if (v := os.environ.get(n) or _EXPORT_TOKENS.get(n))), "")
        if not token:
            # Gemini CLI removes such names from a hook's environment: the bare header was
            # refused with "Illegal header value", which named neither the token nor the cause
            raise ValueError(
                f"no token for serve: none of {', '.join(names)} is set in this process's "
                "environment or in otelhooks.env beside the hooks file (Gemini CLI removes "
                f"variables named *TOKEN* from hooks' environment: put {names[0]}=... there)"
            )
        return {"authorization": f"Bearer {token}"}

    def _fail(self, payload: HookEvent, problem: str) -> HookError:
        return HookError(f"cannot ask serve: {problem}", hook_id=self.hook_id, event=payload.event)

    def _remote_sync(self, url: str, payload: HookEvent) -> dict[str, Any]:
        deadline = time.monotonic() + self.config.timeout + 5
        answer: dict[str, Any] = {}
        try:
            with httpx.Client(
                base_url=url,
                headers=self._headers(),
                timeout=10,
                trust_env=trust_env_for(url),
                verify=tls_context(trust_env=trust_env_for(url)),
            ) as client:
                created = client.post("/v1/approvals", json=self._request(payload))
                answer = _json(created, (201,))
                # the client went away (a daemon's hook client killed): this thread cannot stop
                # its long-poll, so serve is told that one of the polls open is a gone asker's
                stopped, polling = threading.Event(), threading.Event()

                def gone() -> None:
                    stopped.set()
                    self._withdraw_soon(url, str(answer.get("id")), polling=polling.is_set())

                with Asker.holding(gone):
                    while answer.get("state") == "pending" and not stopped.is_set():
                        wait = max(0.0, min(_POLL_S, deadline - time.monotonic()))
                        polling.set()
                        try:
                            got = client.get(
                                f"/v1/approvals/{answer['id']}",
                                params={"wait": f"{wait:.3f}", "asker": "1"},
                                timeout=wait + 10,
                            )
                        finally:
                            polling.clear()
                        if got.status_code == 503:  # no room for one more long-poll: look instead
                            time.sleep(_LOOK_S)
                            got = client.get(f"/v1/approvals/{answer['id']}")
                        answer = _json(got, (200,))
                        if time.monotonic() > deadline and answer.get("state") == "pending":
                            raise ValueError("serve did not apply the default in time")
                if answer.get("state") == "pending":
                    raise ValueError("the client stopped waiting")
                return answer
        except BaseException as exc:
            if answer.get("state") == "pending":  # the call is blocked: nobody waits any more
                self._withdraw_soon(url, str(answer.get("id")))
            if isinstance(exc, (httpx.HTTPError, ValueError, KeyError)):
                raise self._fail(payload, str(exc)) from None
            raise

    def _withdraw_soon(self, url: str, approval_id: str, *, polling: bool = False) -> None:
        """Tell serve, on a thread, that this asker stopped waiting (its card goes, denied by
        ``asker``, unless another asker of the call waits on it): the block is answered at
        once, also when serve hangs (a CLI's hook timeout does not wait for it), and the
        process's exit waits for the thread (at most 2 s)."""
        threading.Thread(target=self._withdraw, args=(url, approval_id, polling)).start()

    def _withdraw(self, url: str, approval_id: str, polling: bool = False) -> None:
        """Serve out of reach is logged, not raised: the call is blocked either way."""
        try:
            httpx.delete(
                f"{url}/v1/approvals/{approval_id}",
                params={"polling": "1"} if polling else None,
                headers=self._headers(),
                timeout=2,
                trust_env=trust_env_for(url),
            )
        except httpx.HTTPError as exc:
            _log.warning("approval not withdrawn", approval=approval_id, error=str(exc))

    async def _remote_async(self, url: str, payload: HookEvent) -> dict[str, Any]:
        deadline = time.monotonic() + self.config.timeout + 5
        answer: dict[str, Any] = {}
        try:
            async with httpx.AsyncClient(
                base_url=url,
                headers=self._headers(),
                timeout=10,
                trust_env=trust_env_for(url),
                verify=tls_context(trust_env=trust_env_for(url)),
            ) as client:
                created = await client.post("/v1/approvals", json=self._request(payload))
                answer = _json(created, (201,))
                while answer.get("state") == "pending":
                    wait = max(0.0, min(_POLL_S, deadline - time.monotonic()))
                    got = await client.get(
                        f"/v1/approvals/{answer['id']}",
                        params={"wait": f"{wait:.3f}", "asker": "1"},
                        timeout=wait + 10,
                    )
                    if got.status_code == 503:  # no room for one more long-poll: look instead
                        await asyncio.sleep(_LOOK_S)
                        got = await client.get(f"/v1/approvals/{answer['id']}")
                    answer = _json(got, (200,))
                    if time.monotonic() > deadline and answer.get("state") == "pending":
                        raise ValueError("serve did not apply the default in time")
                    await asyncio.sleep(0)
                return answer
        except BaseException as exc:
            if answer.get("state") == "pending":  # the call is blocked: nobody waits any more
                self._withdraw_soon(url, str(answer.get("id")))
            if isinstance(exc, (httpx.HTTPError, ValueError, KeyError)):
                raise self._fail(payload, str(exc)) from None
            raise


class _Hold:
    """This waiter's :meth:`ApprovalInbox.hold` of a card, ended once: ``end(reason)`` when
    it stops waiting (the card is withdrawn unless another asker of the call waits on it),
    ``end()`` when it got its answer."""

    def __init__(self, inbox: ApprovalInbox, approval_id: str) -> None:
        self._inbox, self._id = inbox, approval_id
        self._ended = threading.Lock()
        inbox.hold(approval_id)

    def end(self, reason: str = "") -> None:
        if self._ended.acquire(blocking=False):
            self._inbox.release(self._id, gone=bool(reason), reason=reason or WITHDRAWN)


def _call(payload: HookEvent) -> str:
    """The call a card is asked for: its session and tool call id ("" without one, when each
    ask is a card of its own)."""
    ids = [str(getattr(payload, "toolCallId", "") or "")]
    if isinstance(payload, BeforeHumanInterventionEvent):
        ids = [t.toolCallId or "" for t in payload.pendingTools]
    if not all(ids) or not ids:
        return ""
    return "\n".join([payload.sessionKey or "", *ids])


def _args(payload: HookEvent) -> dict[str, Any] | None:
    """The arguments a person is asked about: a tool call's, or those of the tool Claude Code
    asks permission for (``tool_input``, present only with content capture)."""
    args = getattr(payload, "args", None)
    if isinstance(args, dict):
        return args
    if isinstance(payload, BeforeHumanInterventionEvent):
        own = getattr(payload, "claudeCode", None)
        tool_input = own.get("tool_input") if isinstance(own, dict) else None
        if isinstance(tool_input, dict):
            return tool_input
    return None


def _asked(payload: HookEvent) -> dict[str, Any]:
    """What a person approves of an event without arguments (shown, never editable): the message
    a ``message_sending`` would send and where, the prompt a ``before_agent_start`` would run."""
    if isinstance(payload, MessageSendingEvent):
        return {"channel": payload.channelId, "target": payload.target, "content": payload.content}
    shown: dict[str, Any] = {}
    if isinstance(payload, BeforeAgentStartEvent):
        for key in ("input", "userMessage", "fullPrompt"):  # each text once: they often agree
            text = getattr(payload, key)
            if text and text not in shown.values():
                shown[key] = text
    return shown


def _json(response: httpx.Response, accept: tuple[int, ...]) -> dict[str, Any]:
    if response.status_code not in accept:
        raise ValueError(f"status {response.status_code}: {response.text[:200]}")
    body = response.json()
    if not isinstance(body, dict) or "state" not in body:
        raise ValueError("the answer is not an approval")
    return body


def add_export_tokens(tokens: Mapping[str, str]) -> None:
    """Tokens an approval's ``token_env`` names, read from the export file by a CLI's hook
    process: used when the environment lacks the variable (Gemini CLI removed it)."""
    for name, value in tokens.items():
        if value:
            register_secret(value)
            _EXPORT_TOKENS[name] = value


def longest_approval_of(hooks: Iterable[Hook]) -> float:
    """The longest ``approval.timeout`` among ``hooks`` (0 when none asks for an approval)."""
    return max(
        (h.action.config.timeout for h in hooks if isinstance(h.action, ApprovalAction)),
        default=0.0,
    )
