"""``EventLogServer``: the ASGI app on uvicorn, in a background thread or in the foreground.

:func:`serve` builds everything ``otelhooks serve`` runs from hook files: a
:class:`HookSpanProcessor` with the hook lists' hooks and one :class:`AgentEvents` per
``kind: agent_events`` file (a default in-memory log when there is none), then the server.
Received spans go through that processor's foreign-span path, so observer hooks and event
logs see them; intercept hooks cannot act on spans that already ended, and a warning says so.
"""

from __future__ import annotations

import asyncio
import os
import socket
import threading
import time
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Protocol, Self

import structlog
from opentelemetry.sdk.trace import SpanProcessor
from opentelemetry.sdk.trace.export import SpanExporter

from otelhooks._config import AgentEventsConfig, load_config
from otelhooks._errors import ConfigError
from otelhooks._eventlog._agent_events import AgentEvents, NoticeSink
from otelhooks._eventlog._guard import (
    DEFAULT_BODY_TIMEOUT_S,
    DEFAULT_HEADER_TIMEOUT_S,
    ConnectionGuard,
    RateLimitedLoopErrors,
    limit_server_log,
)
from otelhooks._eventlog._http import DEFAULT_MAX_WAITERS, EventLogApp, Route
from otelhooks._eventlog._ingest import DEFAULT_MAX_BODY_BYTES
from otelhooks._eventlog._model import EventLog
from otelhooks._processor import HookSpanProcessor
from otelhooks._redact import register_env_secrets, register_secret

if TYPE_CHECKING:
    import uvicorn

__all__ = ["ADMIN_TOKEN_ENV", "EventLogServer", "serve", "warn_intercept_hooks"]

ADMIN_TOKEN_ENV = "OTELHOOKS_ADMIN_TOKEN"
INGEST_TOKEN_ENV = "OTELHOOKS_INGEST_TOKEN"

_log = structlog.get_logger("otelhooks")


class _Closable(Protocol):
    def close(self) -> None: ...


class EventLogServer:
    """Serves ``GET /v1/events`` over ``logs`` and ``POST /v1/traces`` into ``span_processors``.

    Args:
        logs: the event logs (by name, or a sequence named by each log's ``name``).
        span_processors: where received spans go (``on_end``); usually one
            :class:`HookSpanProcessor`. At start, a warning names its intercept hooks: they
            cannot act on spans that already ended.
        token: the admin bearer token; ``OTELHOOKS_ADMIN_TOKEN`` when omitted. Required.
        ingest_token: the token ``/v1/traces`` wants; ``OTELHOOKS_INGEST_TOKEN``, else the
            admin token.
        host, port: where to listen; port 0 picks a free port (see :attr:`port`).
        max_waiters: concurrent long-polls allowed (one more gets 503).
        max_body_bytes: largest OTLP request body, before and after gunzip (else 413).
        max_connections: open connections at most; past it the oldest idle one is closed
            (default: half the descriptor limit, at most 4,096). See
            :mod:`otelhooks._eventlog._guard`.
        header_timeout_s: time a connection has to send a request head (default 10 s).
        body_timeout_s: time a request's body has to arrive once its head did (default 30 s),
            on every route.
        owned: closed by :meth:`stop` after the HTTP server (logs closed, processors shut down).
        routes: more ``POST`` routes (ingest token), e.g. Claude Code's hook route.
        fallback: the handler of every other path (the web view; it checks its own auth).
        allowed_hosts: host names the server answers to besides ``localhost`` and IP
            addresses, when bound to a loopback address (:mod:`otelhooks._local_hosts`: a
            page using DNS rebinding is refused); bound elsewhere, the only names answered.

    Raises:
        ConfigError: no token was given or found in the environment.

    Example:
        >>> from otelhooks import EventLogServer, RingEventLog
        >>> with EventLogServer([RingEventLog()], token="s3cret") as server:
        ...     print(server.url)
        http://127.0.0.1:...
    """

    def __init__(
        self,
        logs: Mapping[str, EventLog] | Sequence[EventLog] = (),
        *,
        span_processors: Sequence[SpanProcessor] = (),
        token: str | None = None,
        ingest_token: str | None = None,
        host: str = "127.0.0.1",
        port: int = 0,
        max_waiters: int = DEFAULT_MAX_WAITERS,
        max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
        max_connections: int | None = None,
        header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S,
        body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S,
        owned: Sequence[EventLog | AgentEvents | SpanProcessor | _Closable] = (),
        routes: Mapping[str, Route] | None = None,
        fallback: Route | None = None,
        allowed_hosts: Sequence[str] = (),
    ) -> None:
        token = token or os.environ.get(ADMIN_TOKEN_ENV)
        if not token:
            raise ConfigError(f"the event log API needs an admin token: set {ADMIN_TOKEN_ENV}")
        ingest_token = ingest_token or os.environ.get(INGEST_TOKEN_ENV) or None
        # Known secrets from now on: scrubbed from every log line, hook error and span text
        # (a command hook that prints its environment would otherwise print them).
        register_secret(token)
        register_secret(ingest_token)
        named = logs if isinstance(logs, Mapping) else {log.name: log for log in logs}
        self.app = EventLogApp(
            named,
            token=token,
            ingest_token=ingest_token,
            span_processors=span_processors,
            max_waiters=max_waiters,
            max_body_bytes=max_body_bytes,
            routes=routes,
            fallback=fallback,
        )
        self.span_processors = tuple(span_processors)
        self.guard = ConnectionGuard(
            max_connections=max_connections,
            header_timeout_s=header_timeout_s,
            body_timeout_s=body_timeout_s,
        )
        self.host = host
        self.allowed_hosts = tuple(allowed_hosts)
        self._requested_port = port
        self._owned = tuple(owned)
        self._socket: socket.socket | None = None
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None

    @property
    def port(self) -> int:
        """The port listened on (known once started)."""
        if self._socket is None:
            return self._requested_port
        port: int = self._socket.getsockname()[1]
        return port

    @property
    def url(self) -> str:
        """``http://host:port`` of the server."""
        host = f"[{self.host}]" if ":" in self.host else self.host
        return f"http://{host}:{self.port}"

    def bind(self) -> Self:
        """Open the listening socket now (``start`` and ``serve_forever`` do it if needed).

        Raises:
            OSError: the address is in use or cannot be bound.
        """
        if self._socket is None:
            self._socket = _listen(self.host, self._requested_port)
        return self

    def _prepare(self) -> uvicorn.Server:
        from otelhooks._eventlog._guarded_http import GuardedConfig
        from otelhooks._local_hosts import LocalHosts  # it reads this package's ASGI helpers

        hooked = "/v1/hooks/claude-code" in self.app.routes
        for processor in self.span_processors:
            # a processor in front of others (Claude Code's join) names them ``downstream``
            for inner in (processor, *getattr(processor, "downstream", ())):
                if isinstance(inner, HookSpanProcessor):
                    warn_intercept_hooks(inner, claude_code=hooked)
        self.bind()
        config = GuardedConfig(
            LocalHosts(self.app, bound=self.host, allowed=self.allowed_hosts),
            guard=self.guard,
            log_config=None,
            access_log=False,
            lifespan="on",
            timeout_graceful_shutdown=5,
            timeout_keep_alive=5,
            # Nothing here reads a request's client address or scheme, which the proxy-header
            # middleware would rewrite from X-Forwarded-* on every request; and no answer
            # needs to name the server software.
            proxy_headers=False,
            server_header=False,
        )
        self._server = _server_class()(config)
        return self._server

    def start(self, timeout_s: float = 10.0) -> Self:
        """Listen and serve in a daemon thread; returns once requests are accepted."""
        if self._server is not None:
            raise RuntimeError("the event log server was already started")
        server = self._prepare()
        assert self._socket is not None
        self._thread = threading.Thread(
            target=server.run, kwargs={"sockets": [self._socket]}, name="otelhooks-serve"
        )
        self._thread.daemon = True
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"the event log server did not start on {self.url}")
            time.sleep(0.005)
        return self

    def serve_forever(self) -> None:
        """Serve on this thread until SIGINT/SIGTERM, then close what the server owns."""
        if self._server is not None:
            raise RuntimeError("the event log server was already started")
        server = self._prepare()
        assert self._socket is not None
        try:
            server.run(sockets=[self._socket])
        finally:
            self._close_owned()
            self._socket.close()

    def stop(self, timeout_s: float = 10.0) -> None:
        """End waiting long-polls, stop the HTTP server, then close what it owns. Idempotent."""
        self.app.close_threadsafe()
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout_s)
            self._thread = None
        if self._socket is not None:
            self._socket.close()
        self._close_owned()

    def _close_owned(self) -> None:
        owned, self._owned = self._owned, ()
        # Processors first: their queued observers still append to the logs.
        for item in owned:
            if isinstance(item, SpanProcessor):
                item.shutdown()
        for item in owned:
            if not isinstance(item, SpanProcessor):
                item.close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()


def _server_class() -> type[uvicorn.Server]:
    import uvicorn

    class GuardedServer(uvicorn.Server):
        async def startup(self, sockets: list[socket.socket] | None = None) -> None:
            # Accept failures (EMFILE) and other loop errors: one line a second, not one each.
            asyncio.get_running_loop().set_exception_handler(RateLimitedLoopErrors())
            limit_server_log()  # and its own warnings, one per garbage request otherwise
            await super().startup(sockets)

    return GuardedServer


def _Server(config: uvicorn.Config) -> uvicorn.Server:
    return _server_class()(config)


def _listen(host: str, port: int) -> socket.socket:
    # The protocol must be IPPROTO_TCP, not 0 as socket.create_server leaves it: asyncio sets
    # TCP_NODELAY only on such sockets, and without it a response written as headers then body
    # waits ~40 ms for the client's delayed ACK (Nagle), which a long-poll wake cannot afford.
    family, kind, proto, _, address = socket.getaddrinfo(
        host, port, type=socket.SOCK_STREAM, proto=socket.IPPROTO_TCP, flags=socket.AI_PASSIVE
    )[0]
    sock = socket.socket(family, kind, proto)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
        sock.listen(1024)
    except OSError:
        sock.close()
        raise
    return sock


def warn_intercept_hooks(processor: HookSpanProcessor, *, claude_code: bool = False) -> list[str]:
    """Log a warning naming the intercept hooks a receiver cannot run; returns their ids."""
    ids = [hook.id for hook in processor.registry.hooks() if hook.intercepts]
    if ids:
        where = (
            "; they do decide Claude Code's http hooks (POST /v1/hooks/claude-code)"
            if claude_code
            else ""
        )
        _log.warning(
            "intercept hooks cannot act on received spans: the call already happened in the "
            "agent's process, so these hooks never run here; register them in that process" + where,
            hook_ids=ids,
        )
    return ids


def serve(
    hook_files: Iterable[str | os.PathLike[str]] = (),
    *,
    host: str = "127.0.0.1",
    port: int = 0,
    token: str | None = None,
    notice_sink: NoticeSink | None = None,
    max_waiters: int = DEFAULT_MAX_WAITERS,
    span_processors: Sequence[SpanProcessor] = (),
    start: bool = True,
    max_connections: int | None = None,
    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S,
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S,
    claude_code: bool = True,
    span_exporters: Sequence[SpanExporter] = (),
    fail_closed: bool = False,
    hook_timeout_s: float = 8.0,
    web: bool = True,
    jaeger_url: str | None = None,
    grafana_url: str | None = None,
    store: str | None = None,
    allowed_hosts: Sequence[str] = (),
    public_origins: Sequence[str] = (),
    approval_lease_s: float | None = None,
) -> EventLogServer:
    """Build what ``otelhooks serve`` runs from hook files, and start it (unless ``start``
    is False, for :meth:`EventLogServer.serve_forever`).

    Every file is read once by :func:`~otelhooks.load_config` (what ``otelhooks validate``
    checks): ``kind: agent_events`` documents become event logs with their observer hooks; the
    other documents' hooks are registered. Without any ``agent_events``
    file one default in-memory log is served. Received spans run through one
    :class:`HookSpanProcessor` holding all those hooks, then through ``span_processors``.

    With ``claude_code`` (the default) the server also answers Claude Code's HTTP hooks
    (``POST /v1/hooks/claude-code``, the hook lists' intercept hooks deciding), accepts OTLP
    logs and metrics, and joins Claude Code's telemetry with its sessions; hook spans and
    joined spans go to ``span_exporters`` and to OTLP when the ``OTEL_EXPORTER_OTLP_*``
    endpoint is set. Sessions survive a restart when an ``agent_events`` log is durable.
    ``fail_closed`` makes the bridge's own failure deny ``PreToolUse`` instead of answering 500
    (a hook that runs and fails follows its ``on_error``);
    ``hook_timeout_s`` is when a deciding Claude Code hook not answered yet counts as failed.
    With ``web`` (the default) the server also serves the web view and the approvals inbox
    (:mod:`otelhooks.web`), linking trace ids to ``jaeger_url`` and metrics to ``grafana_url``.
    On a loopback ``host`` it answers only ``localhost``, IP addresses and ``allowed_hosts``
    (a web page using DNS rebinding is refused: :mod:`otelhooks._local_hosts`).
    ``public_origins`` (default: ``OTELHOOKS_PUBLIC_ORIGIN``, comma-separated) are the
    addresses browsers open the web view at through a reverse proxy that sends serve its own
    address as ``Host`` (``https://inbox.example.com``): their pages count as serve's own, and
    their host names are answered.

    ``store`` (default: ``OTELHOOKS_STORE``) is where the state is kept: unset for the SQLite
    default (each log its ring or file), or ``postgresql://user@host/db``: every event log is
    then kept in PostgreSQL (schema created or migrated at start), shared with every other
    instance on the same database, and so are the approvals and the runs the web view lists.

    ``approval_lease_s`` (default: ``OTELHOOKS_APPROVAL_LEASE``, else 10, at least 2) is how
    long a pending approval lives with none of its askers waiting on it (an asker killed
    between two looks); on a fleet give every instance the same value. With the SQLite
    default the approvals inbox is the process's: every serve started in it serves the same
    cards (those a stopped one left included), and the lease is the last started one's (a
    serve started while another runs in the process logs a warning saying so).

    Raises:
        ConfigError: a file is invalid, two logs share a name, there is no admin token, a
            public origin is not ``scheme://host[:port]``, the approval lease is not a
            number of at least 2 s, or the store cannot be opened (the message names it).
    """
    from otelhooks.web._auth import origin_hosts, public_origins_from

    origins = public_origins_from(public_origins)
    token = token or os.environ.get(ADMIN_TOKEN_ENV)
    if not token:  # checked before any log file is opened
        raise ConfigError(f"the event log API needs an admin token: set {ADMIN_TOKEN_ENV}")
    register_secret(token)  # before any hook is loaded or run
    register_env_secrets([INGEST_TOKEN_ENV])
    from otelhooks._actions._approval_card import serve_lease

    lease_s = serve_lease(approval_lease_s)  # before anything is opened
    # One parse of each file, by the loader ``otelhooks validate`` uses: the same bounds, the
    # same problems (every one of them), and the ``kind: agent_events`` configs with the hooks.
    loaded = load_config([Path(p) for p in hook_files])
    configs = list(loaded.agent_events)
    hooks = list(loaded.hooks)
    if not configs:
        configs = [AgentEventsConfig()]
    names = [c.name for c in configs]
    duplicate = next((n for n in names if names.count(n) > 1), None)
    if duplicate is not None:
        raise ConfigError(f"two agent_events files are named {duplicate!r}", field="name")
    processor = HookSpanProcessor()
    processor.register(hooks)
    from otelhooks._store._serve import open_state  # the store imports the event log

    state, logs, shared = open_state(store, configs, processor, answer_within_s=hook_timeout_s)
    inbox = state.approval_inbox()
    from otelhooks._actions._approval_inbox import process_inbox

    # every serve sets it: the process's inbox outlives a serve stopped in this process
    (inbox if inbox is not None else process_inbox()).lease_s = lease_s
    if inbox is not None:
        from otelhooks._actions._approval import ApprovalAction

        for hook in processor.registry.hooks():
            if isinstance(hook.action, ApprovalAction):
                hook.action.use_inbox(inbox)  # the fleet's inbox, not this process's
    events = [
        AgentEvents(c, log=log, notice_sink=notice_sink)
        for c, log in zip(configs, logs, strict=True)
    ]
    # the logs' observers only append (O(1), never waiting, never answering): the Claude Code
    # route may answer an event only they watch on its event loop
    recorders = [
        hook
        for item in events
        for hook in item.install(processor)
        if not item.config.show_notice  # a notice goes to a sink of the caller's
    ]
    received: list[SpanProcessor] = [processor, *span_processors]
    owned: list[EventLog | AgentEvents | SpanProcessor | _Closable] = [
        processor,
        *events,
        *shared,
    ]
    routes: dict[str, Route] = {}
    fallback: Route | None = None
    exporters = list(span_exporters)
    if web:
        from otelhooks._capture import capture_from_env
        from otelhooks.web._serving import web_serving

        capture = capture_from_env()
        viewing = web_serving(
            token=token,
            ingest_token=os.environ.get(INGEST_TOKEN_ENV) or None,
            logs=[item.log for item in events],
            jaeger_url=jaeger_url,
            grafana_url=grafana_url,
            capture_content=capture,
            inbox=inbox,
            index=state.trace_index(capture_content=capture),
            public_origins=origins,
        )
        received.append(viewing.index)
        exporters.append(viewing.index)  # the spans serve writes for Claude Code's hooks
        fallback = viewing.app
    if claude_code:
        from otelhooks.integrations.claude_code._serve import (
            claude_code_routes,
            sessions_path_beside,
        )

        durable = next((c.path for c in configs if c.durable and c.path), None)
        drops = processor.engine.metrics.drop_counter("claude_code_sessions")
        serving = claude_code_routes(
            processor,
            downstream=received,
            sessions_path=sessions_path_beside(durable) if durable else None,
            sessions=state.claude_code_sessions(drops),
            exporters=exporters,
            fail_closed=fail_closed,
            decision_timeout_s=hook_timeout_s,
            recorders=recorders,
        )
        received = [serving.span_processor]
        routes = serving.routes
        owned.append(serving)
    if web:
        # after the Claude Code route: its last spans flush into the index before it closes
        owned.append(viewing)
    owned.append(state)  # last: the logs it opened are closed before its connections
    server = EventLogServer(
        [item.log for item in events],
        span_processors=received,
        token=token,
        host=host,
        port=port,
        max_waiters=max_waiters,
        max_connections=max_connections,
        header_timeout_s=header_timeout_s,
        body_timeout_s=body_timeout_s,
        owned=owned,
        routes=routes,
        fallback=fallback,
        allowed_hosts=origin_hosts(allowed_hosts, origins, bound=host),
    )
    return server.start() if start else server
