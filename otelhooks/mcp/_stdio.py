"""The stdio transport: the gateway runs the server as its child and relays newline-delimited
JSON-RPC between its own stdin/stdout (the client) and the child's.

Nothing but protocol frames is written to stdout; the child's stderr is the gateway's stderr.
When the server exits, every request still waiting gets a JSON-RPC error and the gateway exits
with the server's code; when the client closes stdin, the server's stdin is closed, then it is
terminated after a grace period (the MCP stdio shutdown sequence).
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Final

import structlog

from otelhooks.mcp._gateway import McpGateway, Relay

__all__ = ["run_stdio"]

_log = structlog.get_logger("otelhooks.mcp")

# One frame may carry a large tool result (images, files): read lines up to this size.
LINE_LIMIT: Final = 64 * 1024 * 1024
GRACE_S: Final = 2.0


class _Out:
    """One writer per direction; a frame is written whole (no await inside a frame)."""

    def __init__(self, writer: asyncio.StreamWriter | None) -> None:
        self.writer = writer

    def send(self, frames: list[bytes]) -> None:
        if self.writer is None or self.writer.is_closing():
            return
        for frame in frames:
            self.writer.writelines((frame, b"\n"))

    async def drain(self) -> None:
        if self.writer is not None and not self.writer.is_closing():
            with contextlib.suppress(ConnectionError):
                await self.writer.drain()


async def _stdio_streams() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=LINE_LIMIT)
    await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(sys.stdin.fileno(), "rb", 0)
    )
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(sys.stdout.fileno(), "wb", 0)
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return reader, writer


async def _lines(reader: asyncio.StreamReader) -> list[bytes] | None:
    """The next frame (``None`` at end of stream); blank lines are skipped."""
    while True:
        try:
            line = await reader.readuntil(b"\n")
        except asyncio.IncompleteReadError as exc:
            line = exc.partial
            if not line.strip():
                return None
        except asyncio.LimitOverrunError:
            _log.error("a frame exceeded the line limit; the stream is closed", limit=LINE_LIMIT)
            return None
        frame = line.rstrip(b"\r\n")
        if frame.strip():
            return [frame]


async def run_stdio(
    gateway: McpGateway,
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    flush: Callable[[], object] | None = None,
) -> int:
    """Relay between this process's stdin/stdout and the MCP server ``command``.

    ``flush`` is called as soon as the session's spans have ended, before the server is
    stopped: clients signal a stdio server and kill it a fraction of a second later (Claude
    Code: SIGINT, SIGTERM 150 ms later, SIGKILL 400 ms after that), so export cannot wait for
    the server to exit.

    Example:
        >>> import asyncio, sys
        >>> from opentelemetry.trace import NoOpTracer
        >>> from otelhooks import HooksEngine
        >>> hooks = HooksEngine.from_files(["hooks.yaml"])  # doctest: +SKIP
        >>> gateway = McpGateway(hooks, NoOpTracer())  # doctest: +SKIP
        >>> server = ["npx", "server-filesystem", "/tmp"]
        >>> sys.exit(asyncio.run(run_stdio(gateway, server)))  # doctest: +SKIP

    Returns:
        The exit code: the server's when it exited first, 0 when the client closed first.
    """
    try:
        child = await asyncio.create_subprocess_exec(
            *command,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            env=dict(env) if env is not None else None,
            limit=LINE_LIMIT,
        )
    except OSError as exc:
        _log.error("cannot start the MCP server", command=list(command), error=str(exc))
        return 127
    assert child.stdin is not None
    assert child.stdout is not None
    client_in, client_out_writer = await _stdio_streams()
    client_out = _Out(client_out_writer)
    server_in = _Out(child.stdin)
    session = gateway.session()
    decisions: set[asyncio.Task[None]] = set()
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        with contextlib.suppress(NotImplementedError, RuntimeError):
            loop.add_signal_handler(sig, stop.set)

    def deliver(relay: Relay) -> None:
        server_in.send(relay.to_server)
        client_out.send(relay.to_client)
        if relay.later is not None:
            task = asyncio.ensure_future(_finish_later(relay))
            decisions.add(task)
            task.add_done_callback(decisions.discard)

    async def _finish_later(relay: Relay) -> None:
        assert relay.later is not None
        deliver(await relay.later)
        await server_in.drain()
        await client_out.drain()

    async def from_client() -> None:
        while (frames := await _lines(client_in)) is not None:
            for frame in frames:
                deliver(session.from_client(frame))
            await server_in.drain()
            await client_out.drain()

    async def from_server() -> None:
        assert child.stdout is not None
        while (frames := await _lines(child.stdout)) is not None:
            for frame in frames:
                deliver(session.from_server(frame))
            await client_out.drain()

    client_task = asyncio.ensure_future(from_client())
    server_task = asyncio.ensure_future(from_server())
    stop_task = asyncio.ensure_future(stop.wait())
    done, _ = await asyncio.wait(
        {client_task, server_task, stop_task}, return_when=asyncio.FIRST_COMPLETED
    )
    if server_task in done:  # the server exited (or closed its stdout): report, then leave
        code = await child.wait()
        _log.error("the MCP server exited", code=code, command=list(command))
        client_out.send(session.close(f"MCP server exited with code {code}"))
        _flush(flush)
        await client_out.drain()
        client_task.cancel()
        stop_task.cancel()
        _close(client_out_writer)
        return code
    # The client closed stdin (or we were told to stop): let decisions finish, then stop the
    # server the MCP way: close its stdin, wait, terminate, kill.
    stop_task.cancel()
    signalled = stop.is_set()
    _log.info(
        "stopping the MCP server",
        why="signal" if signalled else "the client closed the connection",
    )
    if signalled:  # the kill may follow at once: record the session first
        session.close()
        _flush(flush)
    if decisions:
        await asyncio.wait(decisions, timeout=0.1 if signalled else GRACE_S)
    _close(child.stdin)
    await _stop_child(child)
    if not server_task.done():
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(server_task, GRACE_S)
    client_task.cancel()
    if not session.closed:
        session.close()
        _flush(flush)
    _close(client_out_writer)
    return 0


def _flush(flush: Callable[[], object] | None) -> None:
    if flush is None:
        return
    try:
        flush()
    except Exception as exc:  # export trouble never stops the shutdown
        _log.warning("flushing spans failed", error=str(exc))


async def _stop_child(child: asyncio.subprocess.Process) -> int | None:
    for action in (None, child.terminate, child.kill):
        if action is not None:
            with contextlib.suppress(ProcessLookupError):
                action()
        with contextlib.suppress(asyncio.TimeoutError):
            return await asyncio.wait_for(child.wait(), GRACE_S)
    return child.returncode


def _close(writer: asyncio.StreamWriter) -> None:
    with contextlib.suppress(Exception):
        writer.close()
