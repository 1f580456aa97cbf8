"""``otelhooks serve``: the event log API and an OTLP/HTTP receiver that runs the hooks."""

from __future__ import annotations

import argparse
import signal
import sys
from types import FrameType

from otelhooks._errors import ConfigError
from otelhooks._eventlog._http import DEFAULT_MAX_WAITERS

__all__ = ["add_parser"]

DEFAULT_PORT = 4318  # the OTLP/HTTP port, so OTEL_EXPORTER_OTLP_ENDPOINT needs no path


def _terminate(signum: int, frame: FrameType | None) -> None:
    # uvicorn handles SIGTERM while it serves and re-raises it when it has stopped; ending
    # with SystemExit (not the default handler's kill) lets the logs flush and close.
    raise SystemExit(0)


def _serve(args: argparse.Namespace) -> int:
    from otelhooks._cli._common import missing_extra

    if (needed := missing_extra("server", "uvicorn")) is not None:
        print(f"otelhooks serve: needs {needed}", file=sys.stderr)
        return 2
    from otelhooks._eventlog._server import serve
    from otelhooks._logging import configure_logging

    configure_logging(json=args.log_json)
    try:
        server = serve(
            args.hooks,
            host=args.host,
            port=args.port,
            max_waiters=args.max_waiters,
            start=False,
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
    print(
        f"otelhooks serve: listening on {server.url} (GET /v1/events: {names}; POST /v1/traces)",
        flush=True,
    )
    previous = signal.signal(signal.SIGTERM, _terminate)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)
    return 0


def add_parser(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    serve = sub.add_parser(
        "serve",
        help="serve the agent event log (GET /v1/events) and receive OTLP spans",
        description="Serve GET /v1/events (admin token from OTELHOOKS_ADMIN_TOKEN) and accept "
        "OTLP/HTTP POST /v1/traces (protobuf or JSON), running the observer hooks and event "
        "logs of the --hooks files on every received span.",
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
        "--port", type=int, default=DEFAULT_PORT, help=f"port (default {DEFAULT_PORT})"
    )
    serve.add_argument(
        "--max-waiters",
        type=int,
        default=DEFAULT_MAX_WAITERS,
        metavar="N",
        help=f"long-polls allowed to wait at once; more get 503 (default {DEFAULT_MAX_WAITERS})",
    )
    serve.add_argument("--log-json", action="store_true", help="log lines as JSON")
    serve.set_defaults(func=_serve)
