"""``otelhooks serve``: the event log API and an OTLP/HTTP receiver that runs the hooks."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable

from otelhooks._cli._common import Subcommands, exit_on_sigterm
from otelhooks._errors import ConfigError
from otelhooks._serve_limits import (
    DEFAULT_BODY_TIMEOUT_S,
    DEFAULT_HEADER_TIMEOUT_S,
    DEFAULT_MAX_WAITERS,
)

__all__ = ["add_parser"]

# Not 4318: that is the collector's OTLP/HTTP port in the compose stack, and both often run on
# one machine. An agent points OTEL_EXPORTER_OTLP_ENDPOINT at http://127.0.0.1:4319.
DEFAULT_PORT = 4319


def _serve(args: argparse.Namespace) -> int:
    from opentelemetry.sdk.trace.export import SpanExporter

    from otelhooks._eventlog._server import serve
    from otelhooks._export import OtlpJsonLinesSpanExporter
    from otelhooks._logging import configure_logging

    configure_logging(json=args.log_json)
    exporters: list[SpanExporter] = []
    if args.traces_out:
        exporters.append(OtlpJsonLinesSpanExporter(args.traces_out))
    try:
        server = serve(
            args.hooks,
            host=args.host,
            port=args.port,
            max_waiters=args.max_waiters,
            start=False,
            max_connections=args.max_connections,
            header_timeout_s=args.header_timeout,
            body_timeout_s=args.body_timeout,
            claude_code=not args.no_claude_code,
            fail_closed=args.fail_closed,
            hook_timeout_s=args.hook_timeout,
            span_exporters=exporters,
            web=not args.no_web,
            jaeger_url=args.jaeger_url,
            grafana_url=args.grafana_url,
            store=args.store,
            allowed_hosts=args.allowed_host,
            public_origins=args.public_origin,
            approval_lease_s=args.approval_lease,
        )
    except ConfigError as exc:
        print(f"otelhooks serve: {exc}", file=sys.stderr)
        return 2
    try:
        server.bind()
    except OSError as exc:
        server.stop()
        print(f"otelhooks serve: cannot listen on {args.host}:{args.port}: {exc}", file=sys.stderr)
        return 1
    names = ", ".join(server.app.logs)
    posts = ", ".join(["/v1/traces", *server.app.routes])
    print(
        f"otelhooks serve: listening on {server.url} (GET /v1/events: {names}; POST {posts})",
        flush=True,
    )
    if not args.no_web:
        print(f"otelhooks serve: web view at {server.url}/ (log in with the admin token)")
    try:
        with exit_on_sigterm():
            server.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


def _positive(kind: type[int] | type[float]) -> Callable[[str], float]:
    def parse(text: str) -> float:
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
        if value <= 0:
            raise argparse.ArgumentTypeError(f"must be positive, not {text}")
        return value

    parse.__name__ = kind.__name__  # argparse names the type in its messages
    return parse


def add_parser(sub: Subcommands) -> None:
    serve = sub.add_parser(
        "serve",
        help="serve the agent event log (GET /v1/events) and receive OTLP spans",
        description="Serve GET /v1/events (admin token from OTELHOOKS_ADMIN_TOKEN) and accept "
        "OTLP/HTTP POST /v1/traces (protobuf or JSON), running the observer hooks and event "
        "logs of the --hooks files on every received span; OTLP logs and metrics (POST "
        "/v1/logs, /v1/metrics) and Claude Code's http hooks (POST /v1/hooks/claude-code, "
        "token from OTELHOOKS_INGEST_TOKEN, else the admin token), whose decisions the "
        "--hooks files' intercept hooks make.",
    )
    serve.add_argument(
        "--hooks",
        action="append",
        default=[],
        metavar="PATH",
        help="a hook list or a kind: agent_events file (repeatable)",
    )
    serve.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    serve.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a host name clients reach serve by, besides localhost and IP addresses "
        "(repeatable; on a loopback --host other names are refused: DNS rebinding)",
    )
    serve.add_argument(
        "--public-origin",
        action="append",
        default=[],
        metavar="URL",
        help="an address browsers open the web view at through a reverse proxy that sends "
        "serve its own address as Host (nginx's proxy_pass without proxy_set_header Host), "
        "e.g. https://inbox.example.com: its pages count as serve's own (repeatable; default: "
        "$OTELHOOKS_PUBLIC_ORIGIN, comma-separated)",
    )
    serve.add_argument(
        "--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})"
    )
    serve.add_argument(
        "--max-waiters",
        type=int,
        default=DEFAULT_MAX_WAITERS,
        metavar="N",
        help=f"long-polls allowed to wait at once; more get 503 (default {DEFAULT_MAX_WAITERS})",
    )
    serve.add_argument(
        "--max-connections",
        type=_positive(int),
        default=None,
        metavar="N",
        help="open connections at most; past it the oldest idle one is closed "
        "(default: half the file descriptor limit, at most 4096)",
    )
    serve.add_argument(
        "--header-timeout",
        type=_positive(float),
        default=DEFAULT_HEADER_TIMEOUT_S,
        metavar="SECONDS",
        help="time a connection has to send its request headers "
        f"(default {DEFAULT_HEADER_TIMEOUT_S:g})",
    )
    serve.add_argument(
        "--body-timeout",
        type=_positive(float),
        default=DEFAULT_BODY_TIMEOUT_S,
        metavar="SECONDS",
        help="time a request's body has to arrive once its headers did, on every route "
        f"(default {DEFAULT_BODY_TIMEOUT_S:g})",
    )
    serve.add_argument("--log-json", action="store_true", help="log lines as JSON")
    serve.add_argument(
        "--fail-closed",
        action="store_true",
        help="Claude Code hooks: when the bridge itself fails on PreToolUse (no answer in time, "
        "an input it cannot read, a store failure it cannot work around), answer deny "
        "(default: 500, which Claude Code treats as a non-blocking error and runs the tool); "
        "a hook that runs and fails (a budget guard whose spend the store cannot read too) "
        "follows its on_error: give guards on_error: block",
    )
    serve.add_argument(
        "--hook-timeout",
        type=_positive(float),
        default=8.0,
        metavar="SECONDS",
        help="Claude Code hooks: a decision not made by then is answered as a failure (deny "
        "with --fail-closed, else 500); keep it below the hook timeout Claude Code is given "
        "(install --http writes 10) (default 8)",
    )
    serve.add_argument(
        "--approval-lease",
        type=_positive(float),
        default=None,
        metavar="SECONDS",
        help="withdraw a pending approval none of its askers has waited on for SECONDS (an "
        "asker killed between two looks; on a fleet, by the database's clock: give every "
        "instance the same value); at least 2 (default: $OTELHOOKS_APPROVAL_LEASE, else 10)",
    )
    serve.add_argument(
        "--traces-out",
        metavar="PATH",
        help="append the Claude Code hook spans, the joined spans of the coding agents' own "
        "telemetry and the bridge's spans it receives to PATH as OTLP JSON lines, each span "
        "once (`otelhooks claude-code tree PATH` prints them)",
    )
    serve.add_argument(
        "--no-claude-code",
        action="store_true",
        help="do not serve POST /v1/hooks/claude-code, /v1/logs and /v1/metrics",
    )
    serve.add_argument(
        "--no-web",
        action="store_true",
        help="do not serve the web view (/, /approvals) and the approvals API (/v1/approvals)",
    )
    serve.add_argument(
        "--jaeger-url",
        metavar="URL",
        help="the web view links trace ids to URL/trace/{id} (default: $OTELHOOKS_JAEGER_URL)",
    )
    serve.add_argument(
        "--grafana-url",
        metavar="URL",
        help="the web view links metrics to Grafana's otelhooks dashboards at URL "
        "(default: $OTELHOOKS_GRAFANA_URL)",
    )
    serve.add_argument(
        "--store",
        metavar="URL",
        help="keep the state in PostgreSQL (postgresql://user@host/db), shared with every "
        "instance on it; the schema is created or migrated at start (default: "
        "$OTELHOOKS_STORE, else SQLite files and memory, one instance)",
    )
    serve.set_defaults(func=_serve)
