"""Run one CLI against its scripted model API, both inside a loopback-only network namespace.

``unshare -n python -m tests.coding_agents_cli._isolated SPEC OUT``: brings ``lo`` up, serves
the scripted API of SPEC on 127.0.0.1, runs SPEC's command with SPEC's environment (the API's
URL substituted for ``{api}``), then writes the exit code, the CLI's output and every request
the API received to OUT (JSON). A SPEC with ``serve`` runs ``otelhooks serve`` in the namespace
too, for the CLI's run (stopped with SIGTERM after it; with ``settle_locks``, only once every
bridge daemon whose ``*.sock.lock`` is in that folder has left, its spans exported; with
``web``, only once its web view has been read). A SPEC with ``recorder`` (a port) also runs an
HTTP server there that answers every request ``{}`` and keeps it (OUT's ``recorded``): a hook
of type ``http`` can point at it. Nothing in the namespace can reach another host.
"""

from __future__ import annotations

import fcntl
import json
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

from tests.claude_code_cli._messages_api import MessagesApi, ToolStep, serve_messages_api
from tests.coding_agents_cli._model_apis import GeminiApi, ResponsesApi, ShellStep, serve_api

__all__ = ["main"]


def main(spec_path: str, out_path: str) -> int:
    spec: dict[str, Any] = json.loads(Path(spec_path).read_text())
    subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
    if spec["api"] == "messages":  # Claude Code's: the scripted API of tests/claude_code_cli
        claude = MessagesApi([ToolStep(s["id"], s["tool"], s["args"]) for s in spec["steps"]])
        with serve_messages_api(claude) as url:
            code, stdout, stderr = _run(spec, url)
        result = {"returncode": code, "stdout": stdout, "stderr": stderr}
        Path(out_path).write_text(json.dumps({**result, "requests": claude.requests}))
        return 0
    steps = [ShellStep(**s) for s in spec["steps"]]
    api: ResponsesApi | GeminiApi = (
        ResponsesApi(steps) if spec["api"] == "responses" else GeminiApi(steps)
    )
    with serve_api(api) as url, _recorder(spec.get("recorder")) as recorded:
        code, stdout, stderr = _run(spec, url)
    result = {"returncode": code, "stdout": stdout, "stderr": stderr, "requests": api.requests}
    result["recorded"] = recorded
    Path(out_path).write_text(json.dumps(result))
    return 0


@contextmanager
def _recorder(port: int | None) -> Iterator[list[dict[str, Any]]]:
    """Every request to 127.0.0.1:``port`` (method, path, body), each answered ``{}``."""
    recorded: list[dict[str, Any]] = []
    if port is None:
        yield recorded
        return

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def _keep(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            recorded.append({"method": self.command, "path": self.path, "body": body.decode()})
            self.send_response(200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", "2")
            self.end_headers()
            self.wfile.write(b"{}")

        do_GET = do_POST = do_PUT = _keep

    server = ThreadingHTTPServer(("127.0.0.1", port), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield recorded
    finally:
        server.shutdown()
        server.server_close()


def _run(spec: dict[str, Any], url: str) -> tuple[int, str, str]:
    """Run the spec's command with the API at ``url``: exit code, stdout, stderr (with the
    spec's ``serve`` running beside it, when it has one)."""
    serve = spec.get("serve")
    if not serve:
        return _run_cli(spec, url)
    server = subprocess.Popen(
        serve["argv"],
        env=serve["env"],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=open(serve["log"], "ab"),  # noqa: SIM115 - the child's, closed when it ends
    )
    try:
        _wait_for_port(serve["port"], server)
        done = _run_cli(spec, url)
        if spec.get("settle_locks"):
            _wait_for_daemons(Path(spec["settle_locks"]), deadline_s=spec["timeout_s"])
        if serve.get("web"):
            _dump_web_view(serve["port"], serve["web"])
        return done
    finally:
        server.send_signal(signal.SIGTERM)  # serve flushes what it holds on the way out
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()


def _wait_for_port(port: int, server: subprocess.Popen[bytes]) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and server.poll() is None:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.05)
    raise RuntimeError(f"otelhooks serve did not listen on {port} (exit {server.poll()})")


def _wait_for_daemons(folder: Path, *, deadline_s: float) -> None:
    """Until each bridge daemon of ``folder`` has left: a daemon holds its socket's lock for its
    whole life and lets go of it only after its spans are exported (its OTLP batch flushed)."""
    deadline = time.monotonic() + deadline_s
    for lock in sorted(folder.glob("*.sock.lock")):
        with lock.open("a+b") as held:
            while True:
                try:
                    fcntl.flock(held, fcntl.LOCK_EX | fcntl.LOCK_NB)
                    break
                except OSError:
                    if time.monotonic() > deadline:
                        raise RuntimeError(f"the bridge daemon of {lock} did not leave") from None
                    time.sleep(0.1)


def _web_get(port: int, path: str, token: str) -> Any:
    request = urllib.request.Request(
        f"http://127.0.0.1:{port}{path}", headers={"Authorization": f"Bearer {token}"}
    )
    with urllib.request.urlopen(request, timeout=10) as response:
        return json.loads(response.read())


def _web_traces(port: int, token: str) -> list[dict[str, Any]]:
    listed = _web_get(port, "/v1/ui/operations?limit=1000", token)["operations"]
    traces = [_web_get(port, f"/v1/ui/traces/{op['trace_id']}", token) for op in listed]
    return [trace for trace in traces if trace is not None]


def _holds(trace: dict[str, Any], wait_for: list[list[str]]) -> bool:
    keys = {key for span in trace["spans"] for key in span["a"]}
    return all(keys.intersection(group) for group in wait_for)


def _dump_web_view(port: int, web: dict[str, Any]) -> None:
    """Every trace serve's web view lists, written to ``web["path"]`` once one trace holds what
    ``web["wait_for"]`` names (spans reach the view in batches, after the run ended)."""
    deadline = time.monotonic() + 30
    while True:
        traces = _web_traces(port, web["token"])
        if any(_holds(t, web["wait_for"]) for t in traces) or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    Path(web["path"]).write_text(json.dumps(traces))


def _run_cli(spec: dict[str, Any], url: str) -> tuple[int, str, str]:
    for template in spec.get("templates") or ():
        # kept beside the file: a second run in the same home renders it again
        path = Path(template)
        kept = path.with_name(f"{path.name}.template")
        if not kept.exists():
            kept.write_text(path.read_text())
        path.write_text(kept.read_text().replace("{api}", url))
    env = {k: v.replace("{api}", url) for k, v in spec["env"].items()}
    try:
        done = subprocess.run(
            spec["argv"],
            cwd=spec["cwd"],
            env=env,
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=spec["timeout_s"],
        )
        code, stdout, stderr = done.returncode, done.stdout, done.stderr
    except subprocess.TimeoutExpired as exc:
        code, stdout, stderr = -1, str(exc.stdout or ""), f"timed out: {exc.stderr or ''}"
    return code, stdout, stderr


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
