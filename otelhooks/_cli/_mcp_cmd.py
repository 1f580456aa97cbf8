"""``otelhooks mcp``: the MCP gateway (hooks and spans between any MCP client and server).

stdio: ``otelhooks mcp [options] -- <server command> [args...]`` in place of the server's command.
Streamable HTTP: ``otelhooks mcp --listen 127.0.0.1:PORT --upstream URL [options]``. Logs go to
stderr only: in stdio mode stdout carries the protocol and nothing else.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from otelhooks._cli._common import Subcommands
from otelhooks._errors import ConfigError

if TYPE_CHECKING:
    from otelhooks._hooks import Hook

__all__ = ["add_parser"]

HOOKS_ENV = "OTELHOOKS_HOOKS"
TRACES_ENV = "OTELHOOKS_TRACES_OUT"
# The bearer token HTTP clients must present; from the environment only, as serve's admin
# token (a command line is visible to every user of the machine).
TOKEN_ENV = "OTELHOOKS_MCP_TOKEN"
STALL_ENV = "OTELHOOKS_MCP_STALL_TIMEOUT"


def _fail(message: str) -> int:
    print(f"otelhooks mcp: {message}", file=sys.stderr)
    return 2


def _mcp(args: argparse.Namespace) -> int:
    from otelhooks._config import load_config
    from otelhooks._loopback import loopback
    from otelhooks.mcp import UpstreamHeaders

    command = list(args.command)
    if command[:1] == ["--"]:
        command = command[1:]
    if bool(args.listen) != bool(args.upstream):
        return _fail("--listen and --upstream go together (Streamable HTTP mode)")
    if args.listen and command:
        return _fail("give either a server command (stdio) or --listen/--upstream (HTTP)")
    if not args.listen and not command:
        return _fail("no server command: otelhooks mcp [options] -- <command> [args...]")
    if args.stall_timeout is None:
        try:
            args.stall_timeout = _stall_from_env()
        except ValueError as exc:
            return _fail(str(exc))
    try:
        address = _address(args.listen) if args.listen else None
        headers = UpstreamHeaders.parse(args.header, allowed_env_vars=args.allowed_env_var)
        resolved = headers.resolve()
    except (ValueError, LookupError) as exc:
        return _fail(str(exc))
    token = os.environ.get(TOKEN_ENV) or None
    if address is not None and token is None and not loopback(address[0]):
        return _fail(
            f"--listen {args.listen} is not a loopback address: set {TOKEN_ENV} to the bearer "
            "token clients must present"
        )
    if token is not None:
        from otelhooks._redact import register_secret

        register_secret(token)  # scrubbed from every log line and span the gateway writes
    paths = list(args.hooks) + [p for p in os.environ.get(HOOKS_ENV, "").split(os.pathsep) if p]
    try:
        hooks = load_config(paths).hooks
    except ConfigError as exc:
        return _fail(str(exc))
    if not args.listen:
        from otelhooks.mcp._stdio import stdio_problem

        problem = stdio_problem()  # last: a mistake in the command line is said first
        if problem is not None:
            return _fail(problem)
    return _run(args, hooks, command, address, resolved, token)


def _run(
    args: argparse.Namespace,
    hooks: Sequence[Hook],
    command: list[str],
    address: tuple[str, int] | None,
    headers: dict[str, str],
    token: str | None,
) -> int:
    import asyncio

    from otelhooks._cli._common import log_to_stderr
    from otelhooks._export import OtlpJsonLinesSpanExporter
    from otelhooks._setup import configure
    from otelhooks.mcp import McpGateway

    log_to_stderr()
    if args.traces_out:
        from otelhooks._private_files import private_file

        private_file(args.traces_out)  # spans carry tool names and errors: 0600, as serve's
    # One pipeline: the hooks run on its engine, deliver through its webhook deliverer and are
    # counted in its metrics; the gateway's spans go to its exporters.
    oh = configure(
        service_name=args.service_name,
        hooks=hooks,
        # Appended: an MCP client starts a gateway per session, and each keeps the others'
        # spans (traces_out would hold the last session only).
        span_exporters=[OtlpJsonLinesSpanExporter(args.traces_out)] if args.traces_out else [],
        set_global=False,
        structured_logging=False,
    )
    from otelhooks import _semconv as sc
    from otelhooks._version import __version__

    gateway = McpGateway(
        oh.engine,
        oh.tracer_provider.get_tracer("otelhooks.mcp", __version__, schema_url=sc.SCHEMA_URL),
        meter_provider=oh.meter_provider,
        name=args.name,
        transport="tcp" if address else "pipe",
        upstream=_upstream(args.upstream) if address else None,
        filter_tools=args.filter_tools,
    )
    try:
        if address is not None:
            from otelhooks._cli._common import exit_on_sigterm
            from otelhooks.mcp._http import run_http

            host, port = address
            with exit_on_sigterm():
                return asyncio.run(
                    run_http(
                        gateway,
                        host,
                        port,
                        args.upstream,
                        headers=headers,
                        token=token,
                        allowed_hosts=args.allowed_host,
                    )
                )
        from otelhooks.mcp._stdio import run_stdio

        flush = lambda: oh.tracer_provider.force_flush(1_000)  # noqa: E731
        return asyncio.run(run_stdio(gateway, command, flush=flush, stall_s=args.stall_timeout))
    finally:
        oh.shutdown(5.0)
        oh.engine.shutdown(1.0)


def _upstream(url: str) -> tuple[str, int] | None:
    from urllib.parse import urlsplit

    parts = urlsplit(url)
    if not parts.hostname:
        return None
    return parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)


def _seconds(text: str) -> float:
    """A positive, finite number of seconds (argparse names the option when this fails)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"must be a positive number of seconds, not {text}")
    return value


def _stall_from_env() -> float:
    from otelhooks.mcp._stdio import STALL_S

    text = os.environ.get(STALL_ENV, "").strip()
    if not text:
        return STALL_S
    try:
        return _seconds(text)
    except argparse.ArgumentTypeError as exc:
        raise ValueError(f"{STALL_ENV}: {exc}") from None


def _address(listen: str) -> tuple[str, int]:
    host, sep, port = listen.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"--listen wants HOST:PORT, got {listen!r}")
    return host.strip("[]") or "127.0.0.1", int(port)


def add_parser(sub: Subcommands) -> None:
    cmd = sub.add_parser(
        "mcp",
        help="the MCP gateway: hooks and spans for every tool call to an MCP server",
        description="Relay MCP between a client and a server, running before_tool_call hooks "
        "(deny, mock, rewrite), queueing after_tool_call/on_tool_call_error for observers and "
        "writing a span per MCP request. stdio: otelhooks mcp [options] -- <server command>. "
        "HTTP: otelhooks mcp --listen 127.0.0.1:PORT --upstream URL.",
    )
    cmd.add_argument(
        "--hooks",
        action="append",
        default=[],
        metavar="PATH",
        help=f"hook config file or folder (repeatable; also ${HOOKS_ENV}, {os.pathsep}-separated)",
    )
    cmd.add_argument(
        "--name",
        help="the server's name in matcher values <name>/<tool> (default: serverInfo.name of "
        "the server's initialize answer)",
    )
    cmd.add_argument(
        "--traces-out",
        default=os.environ.get(TRACES_ENV),
        metavar="PATH",
        help=f"append spans as OTLP JSON lines to PATH (default: ${TRACES_ENV}); the "
        "OTEL_EXPORTER_OTLP_* variables add OTLP export",
    )
    cmd.add_argument("--service-name", default="otelhooks-mcp", help="service.name of the spans")
    cmd.add_argument(
        "--filter-tools",
        action="store_true",
        help="hide from tools/list the tools whose before_tool_call hooks deny a call outright",
    )
    cmd.add_argument(
        "--listen",
        metavar="HOST:PORT",
        help=f"serve Streamable HTTP here; clients present the bearer token ${TOKEN_ENV} when it "
        "is set, which a non-loopback address requires",
    )
    cmd.add_argument("--upstream", metavar="URL", help="the MCP server's Streamable HTTP URL")
    cmd.add_argument(
        "--allowed-host",
        action="append",
        default=[],
        metavar="NAME",
        help="a host name clients reach the gateway by, besides localhost and IP addresses "
        "(repeatable; on a loopback --listen other names and origins are refused: DNS rebinding)",
    )
    cmd.add_argument(
        "--header",
        action="append",
        default=[],
        metavar="'NAME: VALUE'",
        help="a header sent upstream; ${VAR} templates resolve from the environment, only for "
        "variables named by --allowed-env-var (repeatable; values are never logged)",
    )
    cmd.add_argument(
        "--allowed-env-var",
        action="append",
        default=[],
        metavar="VAR",
        help="an environment variable --header templates may use (repeatable)",
    )
    cmd.add_argument(
        "--stall-timeout",
        type=_seconds,
        default=None,
        metavar="SECONDS",
        help="stdio: a server that has not read what the gateway wrote to it within SECONDS has "
        "stopped reading; every waiting request gets an error and the gateway ends "
        f"(default: ${STALL_ENV}, else 10)",
    )
    cmd.add_argument(
        "command", nargs=argparse.REMAINDER, help="-- then the stdio server's command and args"
    )
    cmd.set_defaults(func=_mcp)
