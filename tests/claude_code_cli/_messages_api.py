"""A scripted Anthropic Messages API on 127.0.0.1 for the real Claude Code CLI.

The main conversation (the request that offers the ``Bash`` tool) is answered from a script: one
``tool_use`` block per step, then a closing text once every step got its ``tool_result``. Any
other request Claude Code makes (titles, topic checks) gets a short text. Answers are real SSE
streams (``message_start`` ... ``message_stop``), as Claude Code asks for ``"stream": true``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

CLAUDE = Path(__file__).parent / "node_modules" / ".bin" / "claude"
_REPO = Path(__file__).parent.parent.parent
# Claude Code offline against the scripted API (``REAL-PARTS.md``'s recipe): a fake key, no
# telemetry, error reports, update checks or other traffic; ``IS_SANDBOX`` lets
# ``bypassPermissions`` run as root (CI runs as root)
OFFLINE_ENV = {
    "ANTHROPIC_API_KEY": "sk-ant-fake",
    "DISABLE_TELEMETRY": "1",
    "DISABLE_ERROR_REPORTING": "1",
    "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    "DISABLE_AUTOUPDATER": "1",
    "IS_SANDBOX": "1",
}


@dataclass(frozen=True)
class ToolStep:
    """One scripted assistant turn: call ``name`` with ``input`` as ``tool_use`` ``id``."""

    id: str
    name: str
    input: dict[str, Any]


@dataclass
class MessagesApi:
    """The scripted API; ``requests`` keeps every JSON body received."""

    steps: Sequence[ToolStep]
    final_text: str = "All done."
    requests: list[dict[str, Any]] = field(default_factory=list)

    def answer(self, body: dict[str, Any]) -> list[tuple[str, dict[str, Any]]]:
        tools = {t.get("name") for t in body.get("tools") or () if isinstance(t, dict)}
        if "Bash" not in tools:
            return _text_events("ok", input_tokens=5)
        answered = _tool_results(body.get("messages") or ())
        for step in self.steps:
            if step.id not in answered:
                return _tool_events(step)
        return _text_events(self.final_text, input_tokens=40)


def _tool_results(messages: Sequence[Any]) -> set[str]:
    ids: set[str] = set()
    for message in messages:
        content = message.get("content") if isinstance(message, dict) else None
        if isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    ids.add(str(block.get("tool_use_id")))
    return ids


def _start(input_tokens: int) -> tuple[str, dict[str, Any]]:
    message = {
        "id": "msg_scripted",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": 1},
    }
    return "message_start", {"type": "message_start", "message": message}


def _end(stop_reason: str, output_tokens: int) -> list[tuple[str, dict[str, Any]]]:
    return [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": stop_reason, "stop_sequence": None},
                "usage": {"output_tokens": output_tokens},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


def _text_events(text: str, *, input_tokens: int) -> list[tuple[str, dict[str, Any]]]:
    return [
        _start(input_tokens),
        (
            "content_block_start",
            {
                "type": "content_block_start",
                "index": 0,
                "content_block": {"type": "text", "text": ""},
            },
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": text},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        *_end("end_turn", 3),
    ]


def _tool_events(step: ToolStep) -> list[tuple[str, dict[str, Any]]]:
    block = {"type": "tool_use", "id": step.id, "name": step.name, "input": {}}
    partial = json.dumps(step.input)
    return [
        _start(30),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": block},
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "input_json_delta", "partial_json": partial},
            },
        ),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        *_end("tool_use", 12),
    ]


@contextmanager
def serve_messages_api(api: MessagesApi) -> Iterator[str]:
    """Serve ``api`` on 127.0.0.1; yields its base URL (for ``ANTHROPIC_BASE_URL``)."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_HEAD(self) -> None:
            self.send_response(200)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            if not self.path.startswith("/v1/messages") or "count_tokens" in self.path:
                data = json.dumps({"input_tokens": 10}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
                return
            api.requests.append(body)
            events = api.answer(body)
            stream = "".join(
                f"event: {name}\ndata: {json.dumps(data)}\n\n" for name, data in events
            ).encode()
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            self.send_header("Content-Length", str(len(stream)))
            self.send_header("request-id", "req_scripted")
            self.end_headers()
            self.wfile.write(stream)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def claude_p(
    api_url: str,
    project: Path,
    env: Mapping[str, str],
    *,
    prompt: str | None = "clean up",
    options: Sequence[str] = (),
    permission_mode: str = "bypassPermissions",
    stdin: str | None = None,
    timeout_s: float = 90,
) -> subprocess.CompletedProcess[str]:
    """``claude -p PROMPT --permission-mode MODE [options]`` in ``project`` against the scripted
    API at ``api_url`` (no ``PROMPT`` with ``prompt=None``: the messages come on ``stdin``), its
    environment ``env`` (PATH, HOME, ...) over :data:`OFFLINE_ENV`; output captured as text."""
    argv = [str(CLAUDE), "-p", *([prompt] if prompt is not None else [])]
    argv += ["--permission-mode", permission_mode, *options]
    return subprocess.run(
        argv, input=stdin, cwd=project, env={**OFFLINE_ENV, "ANTHROPIC_BASE_URL": api_url, **env},
        capture_output=True, text=True, timeout=timeout_s, check=False,
    )  # fmt: skip


def rm_rf_victim(project: Path, env: Mapping[str, str], *, timeout_s: float = 90) -> MessagesApi:
    """One ``claude -p`` session in ``project`` (as :func:`claude_p`, with ``env``) whose model
    asks for ``rm -rf victim`` (one ``Bash`` call), ``victim/keep.txt`` written first; the CLI
    must exit 0. The scripted API, holding the requests the CLI made."""
    (project / "victim").mkdir(parents=True, exist_ok=True)
    (project / "victim" / "keep.txt").write_text("precious")
    api = MessagesApi([ToolStep("toolu_rm", "Bash", {"command": "rm -rf victim"})])
    with serve_messages_api(api) as url:
        run = claude_p(url, project, env, timeout_s=timeout_s)
    assert run.returncode == 0, run.stderr[-2000:]
    return api


def session_env(tmp_path: Path) -> dict[str, str]:
    """The environment of one ``claude -p`` session (over :data:`OFFLINE_ENV`): its home and the
    bridge's state under ``tmp_path`` (``home`` made here), the bridge run from this checkout."""
    home = tmp_path / "home"
    home.mkdir()
    return {
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}",
        "PYTHONPATH": str(_REPO),
        "HOME": str(home),
        "XDG_RUNTIME_DIR": str(tmp_path / "run"),
        "OTELHOOKS_CLAUDE_STATE": str(tmp_path / "state.sqlite3"),
        "OTELHOOKS_BRIDGE_DAEMON_IDLE": "3",
    }


def run_claude_p(
    api: MessagesApi,
    prompt: str,
    project: Path,
    tmp_path: Path,
    *,
    stream: Sequence[dict[str, Any]] = (),
) -> subprocess.CompletedProcess[str]:
    """``claude -p PROMPT`` in ``project`` against ``api``, its home and bridge state under
    ``tmp_path`` (``REAL-PARTS.md``'s recipe; the bridge runs from this checkout). With
    ``stream``, the messages are sent on stdin instead, one JSON line each, as an SDK host does
    (``--input-format stream-json``: ``user`` messages and ``control_request``s such as
    ``set_model``), and stdout is the CLI's own JSON lines; ``prompt`` is then unused."""
    with serve_messages_api(api) as url:
        env = session_env(tmp_path)
        if not stream:
            return claude_p(url, project, env, prompt=prompt)
        options = ["--input-format", "stream-json", "--output-format", "stream-json"]
        options.append("--verbose")  # stream-json output needs it
        lines = "".join(json.dumps(m) + "\n" for m in stream)
        return claude_p(url, project, env, prompt=None, options=options, stdin=lines)
