"""Scripted model APIs on 127.0.0.1 for the real Codex CLI and Gemini CLI.

Each serves one script: a shell command per step, asked for as the CLI's own shell tool call,
then a closing text once every step was answered. Codex speaks OpenAI's Responses API
(``POST /v1/responses``, an SSE stream of ``response.*`` events, its shell tool is
``exec_command {"cmd": ...}``); Gemini speaks ``streamGenerateContent?alt=sse`` (``data:``
chunks of ``candidates``, its shell tool is ``run_shell_command {"command": ...}``). Every
request body is kept in ``requests`` so a test can read what the model was told (a tool's
output, a hook's reason).
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Protocol

__all__ = ["GeminiApi", "ResponsesApi", "ShellStep", "serve_api"]


@dataclass(frozen=True)
class ShellStep:
    """One scripted model turn: run ``command`` in the CLI's shell tool, call id ``id``.

    With ``tool`` the turn calls that tool instead, with ``args`` (a JSON object), or for
    Codex's freeform tools (``apply_patch``) with ``text`` as its raw input. An argument
    ``"{session}"`` is the number of the last ``session ID`` Codex reported (a running command's,
    for ``write_stdin``). ``namespace`` is the Codex tool namespace the tool is in
    (``collaboration`` for ``spawn_agent``); a step with ``subagent`` is asked of the sub-agent
    the others started (Codex: a request without the CLI's prompt; Gemini: one offering
    ``complete_task``), the others of the agent the person prompted.
    """

    id: str
    command: str = ""
    tool: str = ""
    args: dict[str, Any] | None = None
    text: str | None = None
    namespace: str | None = None
    subagent: bool = False

    def call(self, shell: str, key: str) -> tuple[str, dict[str, Any]]:
        """The tool and arguments to ask for (``shell {key: command}`` by default)."""
        if self.tool:
            return self.tool, dict(self.args or {})
        return shell, {key: self.command}


# the input items that answer a call (by its call_id)
_OUTPUTS = ("function_call_output", "custom_tool_call_output", "tool_search_output")


class _Api(Protocol):
    requests: list[dict[str, Any]]

    def stream(self, path: str, body: dict[str, Any]) -> bytes | None: ...


def _sse(events: Sequence[tuple[str | None, dict[str, Any]]]) -> bytes:
    lines = []
    for name, data in events:
        head = f"event: {name}\n" if name else ""
        lines.append(f"{head}data: {json.dumps(data)}\n\n")
    return "".join(lines).encode()


@dataclass
class ResponsesApi:
    """OpenAI's Responses API as Codex streams it; one function call per step."""

    steps: Sequence[ShellStep]
    final_text: str = "All done."
    requests: list[dict[str, Any]] = field(default_factory=list)

    def stream(self, path: str, body: dict[str, Any]) -> bytes | None:
        if not path.startswith("/v1/responses"):
            return None
        self.requests.append(body)
        answered = {
            str(item.get("call_id"))
            for item in body.get("input") or ()
            if isinstance(item, dict) and item.get("type") in _OUTPUTS
        }
        sub = not any(
            isinstance(item, dict) and item.get("role") == "user" and "clean up" in str(item)
            for item in body.get("input") or ()
        )
        for step in self.steps:
            if step.subagent == sub and step.id not in answered:
                return self._call(self._with_session(step, body), len(self.requests))
        return self._text(len(self.requests))

    @staticmethod
    def _with_session(step: ShellStep, body: dict[str, Any]) -> ShellStep:
        if "{session}" not in (step.args or {}).values():
            return step
        said = re.findall(r"session ID (\d+)", json.dumps(body.get("input")))
        session = int(said[-1]) if said else 0
        args = {k: session if v == "{session}" else v for k, v in (step.args or {}).items()}
        return ShellStep(step.id, tool=step.tool, args=args, namespace=step.namespace)

    def outputs(self) -> dict[str, str]:
        """Every ``function_call_output`` Codex sent back, by call id."""
        found: dict[str, str] = {}
        for body in self.requests:
            for item in body.get("input") or ():
                if isinstance(item, dict) and item.get("type") in (
                    "function_call_output",
                    "custom_tool_call_output",
                ):
                    found[str(item.get("call_id"))] = json.dumps(item.get("output"))
        return found

    @staticmethod
    def _envelope(n: int, status: str, output: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "id": f"resp_{n}",
            "object": "response",
            "status": status,
            "model": "gpt-5.5",
            "output": output,
            "usage": {
                "input_tokens": 20,
                "output_tokens": 5,
                "total_tokens": 25,
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens_details": {"reasoning_tokens": 0},
            },
        }

    def _call(self, step: ShellStep, n: int) -> bytes:
        if step.text is not None:
            return self._custom(step, n)
        if step.tool == "tool_search":
            return self._search(step, n)
        name, args = step.call("exec_command", "cmd")
        arguments = json.dumps(args)
        item = {
            "type": "function_call",
            "id": f"fc_{step.id}",
            "call_id": step.id,
            "name": name,
            "arguments": arguments,
            "status": "completed",
            **({"namespace": step.namespace} if step.namespace else {}),
        }
        started = {**item, "arguments": "", "status": "in_progress"}
        return _sse(
            [
                ("response.created", {"type": "response.created",
                                      "response": self._envelope(n, "in_progress", [])}),
                ("response.output_item.added", {"type": "response.output_item.added",
                                                "output_index": 0, "item": started}),
                ("response.function_call_arguments.delta", {
                    "type": "response.function_call_arguments.delta", "item_id": item["id"],
                    "output_index": 0, "delta": arguments}),
                ("response.function_call_arguments.done", {
                    "type": "response.function_call_arguments.done", "item_id": item["id"],
                    "output_index": 0, "arguments": arguments}),
                ("response.output_item.done", {"type": "response.output_item.done",
                                               "output_index": 0, "item": item}),
                ("response.completed", {"type": "response.completed",
                                        "response": self._envelope(n, "completed", [item])}),
            ]
        )  # fmt: skip

    def _search(self, step: ShellStep, n: int) -> bytes:
        """A ``tool_search`` call, which Codex runs itself (``execution: client``): its
        ``tool_search_output`` loads the deferred tools it found (an MCP server's) for the next
        request."""
        item = {
            "type": "tool_search_call",
            "id": f"ts_{step.id}",
            "call_id": step.id,
            "execution": "client",
            "arguments": dict(step.args or {}),
            "status": "completed",
        }
        return _sse(
            [
                ("response.created", {"type": "response.created",
                                      "response": self._envelope(n, "in_progress", [])}),
                ("response.output_item.done", {"type": "response.output_item.done",
                                               "output_index": 0, "item": item}),
                ("response.completed", {"type": "response.completed",
                                        "response": self._envelope(n, "completed", [item])}),
            ]
        )  # fmt: skip

    def _custom(self, step: ShellStep, n: int) -> bytes:
        """A freeform tool's call (Codex's ``apply_patch``): raw text, not JSON arguments."""
        item = {
            "type": "custom_tool_call",
            "id": f"ctc_{step.id}",
            "call_id": step.id,
            "name": step.tool,
            "input": step.text,
            "status": "completed",
        }
        return _sse(
            [
                ("response.created", {"type": "response.created",
                                      "response": self._envelope(n, "in_progress", [])}),
                ("response.output_item.added", {"type": "response.output_item.added",
                                                "output_index": 0,
                                                "item": {**item, "input": ""}}),
                ("response.custom_tool_call_input.delta", {
                    "type": "response.custom_tool_call_input.delta", "item_id": item["id"],
                    "output_index": 0, "delta": step.text}),
                ("response.output_item.done", {"type": "response.output_item.done",
                                               "output_index": 0, "item": item}),
                ("response.completed", {"type": "response.completed",
                                        "response": self._envelope(n, "completed", [item])}),
            ]
        )  # fmt: skip

    def _text(self, n: int) -> bytes:
        message = {
            "type": "message",
            "id": f"msg_{n}",
            "role": "assistant",
            "status": "completed",
            "content": [{"type": "output_text", "text": self.final_text, "annotations": []}],
        }
        return _sse(
            [
                ("response.created", {"type": "response.created",
                                      "response": self._envelope(n, "in_progress", [])}),
                ("response.output_item.added", {"type": "response.output_item.added",
                                                "output_index": 0, "item": message}),
                ("response.output_text.delta", {"type": "response.output_text.delta",
                                                "item_id": message["id"], "output_index": 0,
                                                "content_index": 0, "delta": self.final_text}),
                ("response.output_item.done", {"type": "response.output_item.done",
                                               "output_index": 0, "item": message}),
                ("response.completed", {"type": "response.completed",
                                        "response": self._envelope(n, "completed", [message])}),
            ]
        )  # fmt: skip


def _key(name: str, args: Any) -> str:
    return json.dumps([name, args], sort_keys=True)


@dataclass
class GeminiApi:
    """Gemini's ``streamGenerateContent`` (SSE); one ``functionCall`` per step.

    Gemini CLI also asks the model for other things (a next-speaker check, a routing choice):
    a request that offers no ``run_shell_command`` tool gets a short text.
    """

    steps: Sequence[ShellStep]
    final_text: str = "All done."
    requests: list[dict[str, Any]] = field(default_factory=list)

    def stream(self, path: str, body: dict[str, Any]) -> bytes | None:
        if ":streamGenerateContent" not in path and ":generateContent" not in path:
            return None
        self.requests.append(body)
        if ":generateContent" in path:  # not streamed (a web search, a check): one JSON object
            text = '{"next_speaker": "user", "reasoning": "done"}'
            return json.dumps(self._data([{"text": text}])).encode()
        if not self._offers(body, "run_shell_command"):
            return self._chunk([{"text": '{"next_speaker": "user", "reasoning": "done"}'}])
        answered = self._answered()
        sub = self._offers(body, "complete_task")
        for step in self.steps:
            name, args = step.call("run_shell_command", "command")
            if step.subagent == sub and _key(name, args) not in answered:
                return self._chunk([{"functionCall": {"name": name, "args": args}}])
        if sub:  # a sub-agent ends by calling complete_task with its result
            done = {"name": "complete_task", "args": {"result": {"response": self.final_text}}}
            return self._chunk([{"functionCall": done}])
        return self._chunk([{"text": self.final_text}])

    def _answered(self) -> set[str]:
        """The calls the last request holds a ``functionResponse`` for."""
        calls: list[str] = []
        found: set[str] = set()
        for content in (self.requests[-1].get("contents") or ()) if self.requests else ():
            for part in content.get("parts") or () if isinstance(content, dict) else ():
                if not isinstance(part, dict):
                    continue
                if "functionCall" in part:
                    call = part["functionCall"]
                    calls.append(_key(str(call.get("name")), call.get("args") or {}))
                elif "functionResponse" in part and calls:
                    found.add(calls[-1])
        return found

    @staticmethod
    def _offers(body: dict[str, Any], name: str) -> bool:
        for tool in body.get("tools") or ():
            for decl in tool.get("functionDeclarations") or () if isinstance(tool, dict) else ():
                if isinstance(decl, dict) and decl.get("name") == name:
                    return True
        return False

    def responses(self) -> dict[str, str]:
        """Each ``functionResponse`` of the last request, keyed by the command it answered."""
        if not self.requests:
            return {}
        calls: list[str] = []
        found: dict[str, str] = {}
        for content in self.requests[-1].get("contents") or ():
            for part in content.get("parts") or () if isinstance(content, dict) else ():
                if not isinstance(part, dict):
                    continue
                if "functionCall" in part:
                    calls.append(str((part["functionCall"].get("args") or {}).get("command")))
                elif "functionResponse" in part and calls:
                    found[calls[-1]] = json.dumps(part["functionResponse"].get("response"))
        return found

    @classmethod
    def _chunk(cls, parts: list[dict[str, Any]]) -> bytes:
        return _sse([(None, cls._data(parts))])

    @staticmethod
    def _data(parts: list[dict[str, Any]]) -> dict[str, Any]:
        return {
            "candidates": [
                {"content": {"role": "model", "parts": parts}, "finishReason": "STOP", "index": 0}
            ],
            "usageMetadata": {
                "promptTokenCount": 20,
                "candidatesTokenCount": 5,
                "totalTokenCount": 25,
            },
            "modelVersion": "gemini-2.5-flash",
        }


@contextmanager
def serve_api(api: _Api) -> Iterator[str]:
    """Serve ``api`` on 127.0.0.1; yields its base URL."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _send(self, status: int, kind: str, data: bytes) -> None:
            self.send_response(status)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self) -> None:
            self._send(404, "application/json", b"{}")

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                body = json.loads(raw or b"{}")
            except ValueError:
                body = {}
            stream = api.stream(self.path, body if isinstance(body, dict) else {})
            if stream is None:
                self._send(404, "application/json", b'{"error": "not scripted"}')
                return
            kind = "application/json" if stream.startswith(b"{") else "text/event-stream"
            self._send(200, kind, stream)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
