"""The bridge daemon behind :mod:`~otelhooks.integrations.claude_code.hook_client`.

One long-lived :class:`CodingAgentBridge` (hooks loaded once, observers and webhooks on its
background worker instead of delaying the hook's exit) answers ``POST /bridge`` on a Unix
socket with the bridge's exact answer as JSON: ``{"exit_code", "stdout", "stderr"}``. Its
sessions are :class:`ServerSessions` over the **same** state file as the one-process bridge, so
an event handled by either continues the other's spans. Only one daemon serves a socket (an
exclusive ``flock`` on ``SOCKET.lock``); it leaves after ``idle_s`` seconds without events (never
with an event unanswered). ``GET /alive`` is answered at once by the event loop, no hook run and
nothing recorded: the hook client asks it while an answer is slow, and kills a daemon that does
not answer it (stopped or blocked). A daemon whose hooks do not load stays too, and answers each
event as the one-process bridge answers that problem, until they load (:class:`_Unloaded`).

Events run on a :class:`~otelhooks.integrations.coding_agents._fair.FairRunner` keyed by session:
one session's slow hooks never hold another's, and an event not answered within ``answer_s``
(25 s by default, inside the 30 s ``install`` writes for the command form) is answered as the
bridge answers a failure (a deny under ``--fail-closed``, else exit 1) and logged as an error.
A hook client that closes its connection before its answer (its CLI killed it at the hook's
timeout) withdraws the approvals asked for its event
(:class:`~otelhooks._actions._asker.Asker`), as serve's hook route does: that end of an event's
time is :mod:`._late_answers`'. The answer such an event still gets (a guard's deny the CLI
never heard: it ran the tool) is logged as an error and counted (``client_gone``). Each
event's command hooks run with the environment of the hook client that sent it, not the
daemon's (:mod:`._event_env`). The bridge it serves with, built once, and the files that bridge
was built from are :mod:`._daemon_build`'s.
"""

from __future__ import annotations

import asyncio
import contextlib
import fcntl
import math
import os
import re
import signal
import socket
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any, Literal

import structlog

from otelhooks._actions._asker import Asker
from otelhooks._actions._command_env import event_environment
from otelhooks._dispatch._calls import waited_within
from otelhooks._errors import ConfigError
from otelhooks._eventlog._asgi import Receive, Scope, Send, send_json
from otelhooks.integrations.coding_agents._bridge import CodingAgentBridge
from otelhooks.integrations.coding_agents._common import HookResponse
from otelhooks.integrations.coding_agents._daemon_build import Stamp, build_bridge, stamp
from otelhooks.integrations.coding_agents._event_env import NO_ENVIRONMENT, TooLarge, read_event
from otelhooks.integrations.coding_agents._fair import FairRunner, Late
from otelhooks.integrations.coding_agents._guard_time import MARGIN_S, guards_s
from otelhooks.integrations.coding_agents._input import InputProblem, parse_input, tool_name_of
from otelhooks.integrations.coding_agents._late_answers import (
    answer_deadline,
    client_gone,
    deciding,
    late_answer,
)
from otelhooks.integrations.coding_agents._run import (
    BridgeOptions,
    _refusal,
    answer_limit,
    answer_seconds,
    answer_time,
    env_seconds,
)
from otelhooks.integrations.coding_agents._sessions import ServerSessions
from otelhooks.integrations.coding_agents._unheard import tool_use_id_of, unheard

__all__ = ["DEFAULT_IDLE_S", "run_daemon"]

DEFAULT_IDLE_S = 900.0
# the fairness key, read without parsing (Claude Code writes session_id first)
_SESSION = re.compile(rb'"session_id"\s*:\s*"((?:[^"\\]|\\.){0,256})"')

_log = structlog.get_logger("otelhooks")


class _Served(ABC):
    """What both kinds of daemon answer alike: the lifespan, ``GET /alive``, ``{"stale": true}``
    once this daemon must answer no more events, and the count of events not answered yet; the
    work of an event runs on ``runner``'s daemon threads, answered within ``answer_s``."""

    def __init__(
        self,
        options: BridgeOptions,
        *,
        answer_s: float,
        on_drop: Callable[[int, str], None] | None = None,
    ) -> None:
        from otelhooks.integrations.coding_agents._dialects import dialect_named

        self.options = options
        self.dialect = dialect_named(options.dialect)
        self.answer_s = answer_s
        self.runner = FairRunner(on_drop=on_drop)
        self.stale = False  # this daemon answers no more events, and leaves
        self.last = time.monotonic()
        self.busy = 0  # events not answered yet: the daemon does not leave under them

    def changed(self) -> bool:
        """Whether what this daemon answers with changed since it started: its working folder
        (the folder of the event that started it) is gone. A hook command started there would
        fail, and a guard with it, for every event of every session it serves."""
        try:
            os.getcwd()
        except OSError:
            return True
        return False

    @abstractmethod
    async def _serve(self, receive: Receive, send: Send) -> None:
        """Answer one ``POST /bridge``."""

    def guards_of(self, head: bytes) -> list[str]:
        """The ids of the guards that would judge the event whose start is ``head`` (none
        known here: the hooks did not load)."""
        return []

    def too_large(self, big: TooLarge) -> HookResponse:
        """The answer to an event past the body limit, which no hook read: a deny naming the
        guards that would have judged it (they could not check it), ``--fail-closed`` or not,
        as serve's route answers a body past its own limit; else the bridge's answer to a
        problem (a deny under ``--fail-closed``, else exit 1), its size said either way."""
        event = self.dialect.event_of(big.head)
        guards = self.guards_of(big.head) if event in ("PreToolUse", None) else []
        problem = str(big)
        if guards:
            problem = f"{problem}: hook {', '.join(guards)} could not check it"
        _log.error(
            "the hook input is too large for the bridge daemon", size=big.size, guards=guards
        )
        refused = _refusal(event, problem, self.options, closed=bool(guards))
        return self.dialect.answer(refused)

    def close(self) -> None:
        """Release what the daemon holds (called once it has stopped serving)."""
        self.runner.close()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "lifespan":
            while (await receive())["type"] != "lifespan.shutdown":
                await send({"type": "lifespan.startup.complete"})
            await send({"type": "lifespan.shutdown.complete"})
            return
        if scope["type"] != "http":
            return
        if scope["path"] == "/alive":
            await send_json(send, 200, {})
            return
        if self.stale or self.changed():
            # The client answers this event with the one-process bridge (which loads the hooks
            # afresh) and starts a new daemon once this one has left.
            self.stale = True
            await send_json(send, 200, {"stale": True})
            return
        self.busy += 1
        try:
            await self._serve(receive, send)
        except TooLarge as big:
            await send_json(send, 200, _answer_body(self.too_large(big)))
        finally:
            self.busy -= 1
            self.last = time.monotonic()


def _answer_body(response: HookResponse) -> dict[str, Any]:
    return {"exit_code": response.exit_code, "stdout": response.stdout, "stderr": response.stderr}


class _Unloaded(_Served):
    """The daemon of hooks that do not load: a broken hooks file, a ``script:`` guard that does
    not import, a state file it cannot open. Leaving at once would make every event start a
    daemon and run the one-process bridge (0.46 s each on an idle machine). It stays, and builds
    the bridge again for each event, so that its answer is about the files as they are then:
    still failing, the one-process bridge's answer to that problem (a deny under
    ``--fail-closed``, else exit 1 with the problem on stderr); built, ``{"stale": true}``, and
    it leaves, so that the next event starts a daemon with the mended hooks."""

    async def _serve(self, receive: Receive, send: Send) -> None:
        _, raw = await read_event(receive)
        try:
            payload = self.dialect.to_bridge(parse_input(raw))
        except InputProblem as exc:
            response = _refusal(self.dialect.event_of(raw), str(exc), self.options)
        else:
            try:  # on the runner's daemon threads: an import that hangs never holds the exit
                problem = await self.runner.run("", self.problem, timeout_s=self.answer_s)
            except Late as late:  # a guard's module that hangs as it is imported
                problem = f"the hooks did not load: {late}"
            if problem is None:
                self.stale = True
                await send_json(send, 200, {"stale": True})
                return
            name = payload.get("hook_event_name")
            response = _refusal(name if isinstance(name, str) else None, problem, self.options)
        await send_json(send, 200, _answer_body(self.dialect.answer(response)))

    def problem(self) -> str | None:
        """Why the bridge cannot be built now (as the one-process bridge words it), or ``None``
        when it can."""
        try:
            bridge, _ = build_bridge(self.options, os.environ)
        except ConfigError as exc:
            return str(exc)
        except Exception as exc:
            _log.exception(f"the {self.dialect.display_name} bridge daemon could not start")
            return f"{type(exc).__name__}: {exc}"
        _close(bridge)
        return None


def _close(bridge: CodingAgentBridge) -> None:
    bridge.close()
    if isinstance(bridge.state, ServerSessions):
        bridge.state.close()


class _DaemonApp(_Served):
    def __init__(
        self,
        bridge: CodingAgentBridge,
        options: BridgeOptions,
        *,
        answer_s: float,
        sources: Mapping[str, Stamp] | None = None,
    ) -> None:
        self.on_drop = bridge.engine.metrics.drop_counter("claude_code_hooks")
        super().__init__(options, answer_s=answer_s, on_drop=self.on_drop)
        self.bridge = bridge
        # an answer time set outright is the time; the CLI's timeout for the hook, if known,
        # the most the guards may have (:mod:`._guard_time`)
        self.fixed = answer_time(os.environ)[1]
        self.limit_s = answer_limit(options)
        # whether any event's guards may need more than the answer time (all the hooks' time
        # bounds each event's): else no event's input is read for them, on every event's path
        need = guards_s(bridge.engine.registry.hooks()) + MARGIN_S
        self.longer = self.limit_s is not None and not self.fixed and need > answer_s
        self.sources = dict(sources or {})

    def changed(self) -> bool:
        # The hooks or a guard's code changed since they were loaded: answering with them would
        # run the old guard.
        return super().changed() or any(stamp(f) != t for f, t in self.sources.items())

    def close(self) -> None:
        super().close()
        _close(self.bridge)

    def guards_of(self, head: bytes) -> list[str]:
        # Claude Code's tool names are the matchers'; another CLI's may be matched by an alias
        # only its whole input gives, so any guard of a tool call may be the one
        tool = tool_name_of(head) if self.dialect.name == "claude-code" else None
        hooks = self.bridge.engine.registry.may_match(
            "before_tool_call", (tool,) if tool is not None else None
        )
        return sorted({h.id for h in hooks if h.mode == "enforce" and not h.notifies})

    def answer(self, raw: bytes) -> HookResponse:
        return self.dialect.answer(self._answer(raw, self.dialect.to_bridge))

    def _decide(
        self, env: dict[str, str], raw: bytes, answer_s: float, asker: Asker | None = None
    ) -> HookResponse:
        """:meth:`answer` on the runner's thread, whose waiter (the event loop) answers within
        ``answer_s``: sync Python hooks run on this thread (``waited_within``); the approvals
        asked there are withdrawn when ``asker`` (the hook client) goes away. Command hooks run
        with ``env``, the hook client's environment: this daemon's is the environment of the
        session that started it, and a guard reading ``$STRICT`` judged another session by it."""
        asking = asker.asking() if asker is not None else contextlib.nullcontext()
        with waited_within(answer_s), asking, event_environment(env):
            return self.answer(raw)

    def _answer(
        self, raw: bytes, to_bridge: Callable[[dict[str, Any]], dict[str, Any]]
    ) -> HookResponse:
        try:
            payload = to_bridge(parse_input(raw))
        except InputProblem as exc:
            return _refusal(self.dialect.event_of(raw), str(exc), self.options)
        name = payload.get("hook_event_name")
        try:
            return self.bridge.handle(payload)
        except Exception as exc:
            _log.exception(f"the {self.dialect.display_name} bridge failed", hook_event=name)
            event = name if isinstance(name, str) else None
            return _refusal(event, f"{type(exc).__name__}: {exc}", self.options)

    async def _serve(self, receive: Receive, send: Send) -> None:
        self.last = time.monotonic()
        env, raw = await read_event(receive)
        if env is None:  # not our hook client's: its guards would run with another environment
            response = self.dialect.answer(
                _refusal(self.dialect.event_of(raw), NO_ENVIRONMENT, self.options)
            )
            await send_json(send, 200, _answer_body(response))
            return
        found = _SESSION.search(raw, 0, 1 << 16)
        key = found.group(1).decode("utf-8", "replace") if found else ""
        hooks = None
        if self.longer:  # the guards may have longer: which ones decide this event
            hooks = deciding(self.bridge, self.dialect, raw)
        answer_s, asks = answer_deadline(
            self.bridge, self.answer_s, hooks=hooks, fixed=self.fixed, limit_s=self.limit_s
        )
        # a person may be asked: the hook client killed by its CLI (its timeout) withdraws
        # what it asked, for the CLI went on without the answer
        asker = Asker() if asks else None
        watch = asyncio.ensure_future(client_gone(receive, asker))
        try:
            response = await self.runner.run(
                key, partial(self._decide, env, raw, answer_s, asker), timeout_s=answer_s
            )
        except Late as late:
            response = late_answer(self.bridge, self.dialect, self.options, raw, late, answer_s)
        finally:
            gone = watch.done()
            watch.cancel()
        if gone:
            self._unheard(raw, response)
        await send_json(send, 200, _answer_body(response))

    def _unheard(self, raw: bytes, response: HookResponse) -> None:
        """Say that ``response`` reached nobody (:func:`~._late_answers.unheard`)."""
        unheard(self.on_drop, self.dialect.event_of(raw), tool_use_id_of(raw), response)


def _build_within(
    options: BridgeOptions, seconds: float
) -> tuple[CodingAgentBridge, dict[str, Stamp]] | Literal["failed", "late"]:
    """:func:`build_bridge`'s result, ``"failed"`` (logged), or ``"late"`` when it still runs
    after ``seconds`` (on a daemon thread, which is left to it)."""
    result: list[tuple[CodingAgentBridge, dict[str, Stamp]] | Literal["failed"]] = []

    def build() -> None:
        try:
            result.append(build_bridge(options, os.environ))
        except Exception:
            _log.exception(
                "the bridge daemon's hooks did not load: each event is answered as a failure"
            )
            result.append("failed")

    worker = threading.Thread(target=build, name="otelhooks-daemon-build", daemon=True)
    worker.start()
    worker.join(seconds)
    return result[0] if result else "late"


def run_daemon(socket_path: str, options: BridgeOptions, *, idle_s: float | None = None) -> int:
    """Serve ``socket_path`` until idle; returns 0 (also when another daemon already serves)."""
    import uvicorn

    from otelhooks._actions._approval import UNSERVED_BLOCKS
    from otelhooks.integrations.claude_code.hook_client import IDLE_ENV

    UNSERVED_BLOCKS.set()  # a hook process: nobody lists its approvals
    idle = env_seconds(os.environ, IDLE_ENV, DEFAULT_IDLE_S) if idle_s is None else idle_s
    answer_s = answer_seconds(os.environ)
    path = Path(socket_path)
    lock = open(f"{path}.lock", "a+b")  # noqa: SIM115 - held for the daemon's life
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.close()
        return 0  # another daemon serves this socket
    app: _Served
    built = _build_within(options, answer_s)
    if built == "late":
        # a guard's module that hangs as it is imported: waiting on, the daemon would hold its
        # lock without serving, for ever, and no daemon could start again for these hooks
        _log.error("the bridge daemon's hooks did not load in time: it leaves", answer_s=answer_s)
        lock.close()
        return 0
    if built == "failed":
        app = _Unloaded(options, answer_s=answer_s)
    else:
        bridge, sources = built
        if isinstance(bridge.state, ServerSessions):
            bridge.state.on_drop = bridge.engine.metrics.drop_counter("claude_code_sessions")
        app = _DaemonApp(bridge, options, answer_s=answer_s, sources=sources)
    path.unlink(missing_ok=True)
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old = os.umask(0o177)
    try:
        sock.bind(str(path))
    finally:
        os.umask(old)
    sock.listen(256)
    bound = path.stat().st_ino
    config = uvicorn.Config(app, log_config=None, access_log=False, lifespan="on")
    server = uvicorn.Server(config)

    async def watch_idle() -> None:
        app.last = time.monotonic()  # idle from when it serves, not from when it was built
        while not server.should_exit:
            # a loop that cannot come back here for the answer time and 30 s is frozen (a
            # guard holding the interpreter's lock in one C call): the kernel ends the daemon
            # (SIGALRM's default action runs no code of ours), which once its client was killed
            # nobody else did, spinning on a core for good
            signal.alarm(math.ceil(answer_s + 30.0))
            await asyncio.sleep(min(1.0, idle / 4))
            # an event still running would lose its answer, and the hook client, finding the
            # socket closed, would take the daemon for dead and run the event again
            if not app.busy and (
                app.stale or time.monotonic() - app.last > idle or not _ours(path, bound)
            ):
                server.should_exit = True

    async def main() -> None:
        watcher = asyncio.ensure_future(watch_idle())
        try:
            await server.serve(sockets=[sock])
        finally:
            watcher.cancel()  # its last alarm stands: the daemon's close in that time too

    try:
        asyncio.run(main())
    finally:
        if _ours(path, bound):  # not a newer daemon's
            path.unlink(missing_ok=True)
        sock.close()
        app.close()
        lock.close()
    return 0


def _ours(path: Path, bound: int) -> bool:
    """Whether ``path`` is still the socket this daemon bound. Its file deleted (a tmp cleaner,
    the runtime folder removed at logout) or a newer daemon's, no event reaches it any more:
    it leaves, and frees its lock for the daemon the next event starts."""
    try:
        return path.stat().st_ino == bound
    except OSError:
        return False
