"""The stdio transport: the gateway runs the server as its child and relays newline-delimited
JSON-RPC between its own stdin/stdout (the client) and the child's.

Nothing but protocol frames is written to stdout; the child's stderr is the gateway's stderr.
When the server exits (or closes its stdout), every request still waiting gets a JSON-RPC error
and the gateway exits with the server's code; when the client closes stdin, the server's stdin
is closed, then it is terminated after a grace period (the MCP stdio shutdown sequence), and
each request still unanswered then gets a JSON-RPC error (a client may close only its side).

A frame is one line of at most :data:`LINE_LIMIT` bytes. A longer client line is answered with a
JSON-RPC parse error and never forwarded; a longer server line is dropped and the request it
answers gets a JSON-RPC error (every waiting request, when its id cannot be told). Either way
the rest of the line is skipped as it arrives, without holding it, and the session goes on.
A client line with a carriage return inside (after the gateway drops one before the newline) is
answered with a parse error too: a server that reads text lines with universal newlines (the
Python SDK's stdio server) would split it into other messages than the one the hooks read.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import stat
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import structlog

from otelhooks.mcp._gateway import McpGateway, McpSession, Relay

__all__ = ["LINE_LIMIT", "Oversize", "run_stdio", "stdio_problem"]

_log = structlog.get_logger("otelhooks.mcp")

# One frame may carry a large tool result (images, files): read lines up to this size.
LINE_LIMIT: Final = 64 * 1024 * 1024
CHUNK_BYTES: Final = 1 << 16
HEAD_BYTES: Final = 4096
# What a stream reader buffers before it stops reading the pipe (the frame is kept by _Lines).
READ_BUFFER: Final = 1 << 20
GRACE_S: Final = 2.0
# A server that has not taken what we wrote to its stdin by then has stopped reading: the
# gateway would otherwise wait on it forever and never see its client leave. The default of
# ``otelhooks mcp --stall-timeout`` (``$OTELHOOKS_MCP_STALL_TIMEOUT``).
STALL_S: Final = 10.0


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


def stdio_problem() -> str | None:
    """Why this process's stdin or stdout cannot carry an MCP client's frames (``None`` when
    both can): the event loop reads and writes pipes, sockets and terminals, never a regular
    file (``otelhooks mcp -- server < requests.jsonl`` ended in asyncio's traceback)."""
    for fd, name, instead in ((0, "stdin", "cat FILE | otelhooks mcp ..."),
                              (1, "stdout", "otelhooks mcp ... | cat > FILE")):  # fmt: skip
        try:
            mode = os.fstat(fd).st_mode
        except OSError:
            return f"{name} is closed: an MCP client runs the gateway with pipes on both"
        if not (stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode) or stat.S_ISCHR(mode)):
            return (
                f"{name} is a file, not a pipe: an MCP client runs the gateway with pipes on "
                f"both; to use a file, go through a pipe ({instead})"
            )
    return None


async def _stdio_streams() -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=READ_BUFFER)
    await loop.connect_read_pipe(
        lambda: asyncio.StreamReaderProtocol(reader), os.fdopen(sys.stdin.fileno(), "rb", 0)
    )
    # The frames get stdout to themselves: the process's own stdout (descriptor 1 and
    # ``sys.stdout``) becomes its stderr, so that a Python hook's ``print`` (or a command it
    # starts on the inherited stdout) cannot join a frame, the client then reading neither.
    sys.stdout.flush()
    frames = os.dup(sys.stdout.fileno())
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())
    sys.stdout = sys.stderr
    transport, protocol = await loop.connect_write_pipe(
        asyncio.streams.FlowControlMixin, os.fdopen(frames, "wb", 0)
    )
    writer = asyncio.StreamWriter(transport, protocol, None, loop)
    return reader, writer


@dataclass(frozen=True, slots=True)
class Oversize:
    """A line longer than the limit: its first bytes (for its id), the rest was discarded."""

    head: bytes


class _Lines:
    """Newline-delimited frames of a stream, holding at most ``limit`` bytes of one frame: a
    longer line is reported as :class:`Oversize` and the rest of it skipped as it arrives."""

    def __init__(self, reader: asyncio.StreamReader, limit: int = LINE_LIMIT) -> None:
        self._reader = reader
        self._limit = limit
        self._buffer = bytearray()
        self._scanned = 0  # no newline in self._buffer[:self._scanned]
        self._skipping = False

    async def next(self) -> bytes | Oversize | None:
        """The next frame (blank lines skipped); ``None`` at the end of the stream."""
        while True:
            end = self._buffer.find(b"\n", self._scanned)
            if end >= 0:
                line = bytes(self._buffer[:end])
                del self._buffer[: end + 1]
                self._scanned = 0
                if self._skipping:  # the end of an oversize line, already reported
                    self._skipping = False
                    continue
                if end > self._limit:
                    return Oversize(line[:HEAD_BYTES])
                frame = line.rstrip(b"\r")
                if frame.strip():
                    return frame
                continue
            if self._skipping:
                self._buffer.clear()
            elif len(self._buffer) > self._limit:
                head = bytes(self._buffer[:HEAD_BYTES])
                self._buffer.clear()
                self._skipping = True
                self._scanned = 0
                return Oversize(head)
            self._scanned = len(self._buffer)
            chunk = await self._reader.read(CHUNK_BYTES)
            if not chunk:
                rest, self._skipping = bytes(self._buffer), False
                self._buffer.clear()
                self._scanned = 0
                return rest.rstrip(b"\r") if rest.strip() else None
            self._buffer += chunk


async def run_stdio(
    gateway: McpGateway,
    command: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
    flush: Callable[[], object] | None = None,
    stall_s: float = STALL_S,
) -> int:
    """Relay between this process's stdin/stdout and the MCP server ``command``.

    A server that has not taken what the gateway wrote to its stdin within ``stall_s`` seconds
    has stopped reading: every waiting request gets a JSON-RPC error, the server is killed and
    the gateway ends with 1.

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
            limit=READ_BUFFER,
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

    async def ask(frame: bytes) -> None:  # the gateway's own request (its tools/list)
        server_in.send([frame])
        await server_in.drain()

    session.to_server = ask
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

    async def from_client() -> bool:
        """Relay the client's frames; False when the server stopped reading its stdin."""
        lines = _Lines(client_in)
        while (frame := await lines.next()) is not None:
            if isinstance(frame, Oversize):
                deliver(session.refuse(frame.head, f"a frame longer than {LINE_LIMIT} bytes"))
            elif b"\r" in frame:
                # JSON whitespace to the hooks, a line end to a server reading text lines (the
                # Python SDK's): it would read other messages than the one the hooks judged
                deliver(session.refuse(frame, "a carriage return inside a frame"))
            else:
                deliver(session.from_client(frame))
            try:
                await asyncio.wait_for(server_in.drain(), stall_s)
            except TimeoutError:
                return False
            await client_out.drain()
        return True

    async def from_server() -> None:
        assert child.stdout is not None
        lines = _Lines(child.stdout)
        while (frame := await lines.next()) is not None:
            if isinstance(frame, Oversize):
                deliver(_oversize_answer(session, frame))
            else:
                deliver(session.from_server(frame))
            await client_out.drain()

    client_task = asyncio.ensure_future(from_client())
    server_task = asyncio.ensure_future(from_server())
    stop_task = asyncio.ensure_future(stop.wait())
    done, _ = await asyncio.wait(
        {client_task, server_task, stop_task}, return_when=asyncio.FIRST_COMPLETED
    )
    if client_task in done and client_task.result() is False:
        # the server stopped reading its stdin: every waiting call gets an error, then leave
        _log.error("the MCP server stopped reading its input", command=list(command))
        client_out.send(session.close(f"MCP server read no input for {stall_s:g} s"))
        _flush(flush)
        await client_out.drain()
        server_task.cancel()
        stop_task.cancel()
        child.kill()
        await child.wait()
        _close(client_out_writer)
        return 1
    if server_task in done:  # the server exited (or closed its stdout): report, then leave
        code = await _stop_child(child)
        _log.error("the MCP server exited", code=code, command=list(command))
        client_out.send(session.close(f"MCP server exited with code {code}"))
        _flush(flush)
        await client_out.drain()
        client_task.cancel()
        stop_task.cancel()
        _close(client_out_writer)
        return code if code is not None else 1
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
        # A client that only closed its side still reads: each call still unanswered (its hooks
        # still deciding, or the server silent) gets an error, never silence. A decision that
        # ends later sends nothing.
        for task in decisions:
            task.cancel()
        reason = "the client closed its input before this request was answered"
        unanswered = session.fail_all(reason, error_type="session_closed")
        if unanswered:
            _log.warning("requests left unanswered as the client left", count=len(unanswered))
            client_out.send(unanswered)
            await client_out.drain()
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


def _oversize_answer(session: McpSession, frame: Oversize) -> Relay:
    """A server line past the limit: the request it answers gets an error, or, when its id
    cannot be told, every request still waiting does (any of them may have been answered)."""
    problem = f"a frame longer than {LINE_LIMIT} bytes"
    relay = session.server_garbage(frame.head, problem)
    if not relay.to_client:
        reason = f"the MCP server sent an answer that cannot be read: {problem}"
        relay.to_client = session.fail_all(reason, error_type="invalid_response")
    return relay


async def _stop_child(child: asyncio.subprocess.Process) -> int | None:
    """Wait for ``child`` to exit, then terminate it, then kill it (``GRACE_S`` each): a server
    that closed its stdout but stays alive is stopped too, so the gateway always ends."""
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
