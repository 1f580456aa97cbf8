"""A real ``otelhooks serve`` child process on 127.0.0.1, and OTLP/JSON requests of tool spans."""

from __future__ import annotations

import json
import os
import re
import resource
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx

from tests.reliability._procs import ROOT, cli_env

ADMIN = "admin-secret-4b1d"
INGEST = "ingest-secret-9c2e"


class ServeProc:
    """``otelhooks serve --port 0`` with its output in files; ``url`` once it listens."""

    def __init__(
        self,
        tmp: Path,
        *args: str,
        nofile: int | None = None,
        wait: bool = True,
        home: Path | None = None,
    ) -> None:
        self.out_path = tmp / f"serve-{time.monotonic_ns()}.out"
        self.err_path = self.out_path.with_suffix(".err")

        def limit() -> None:
            if nofile is not None:
                resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

        env = cli_env(OTELHOOKS_ADMIN_TOKEN=ADMIN, OTELHOOKS_INGEST_TOKEN=INGEST)
        if home is not None:  # where serve keeps its files of ~/.otelhooks (the outbox)
            env["HOME"] = str(home)
        with self.out_path.open("wb") as out, self.err_path.open("wb") as err:
            self.proc = subprocess.Popen(
                [sys.executable, "-m", "otelhooks", "serve", "--port", "0", *args],
                stdout=out,
                stderr=err,
                env=env,
                cwd=ROOT,
                preexec_fn=limit,
            )
        self.url = ""
        if wait:
            self.wait_listening()

    def wait_listening(self, timeout_s: float = 60.0) -> str:
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            found = re.search(r"listening on (http://\S+) ", self.out_path.read_text())
            if found:
                self.url = found.group(1)
                return self.url
            if self.proc.poll() is not None:
                raise AssertionError(f"serve exited {self.proc.returncode}: {self.output()}")
            time.sleep(0.05)
        raise AssertionError(f"serve did not start: {self.output()}")

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1])

    def output(self) -> str:
        return self.out_path.read_text(errors="replace") + self.err_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def kill9(self) -> None:
        os.kill(self.proc.pid, signal.SIGKILL)
        self.proc.wait()

    def version(self) -> dict[str, Any]:
        response = httpx.get(
            f"{self.url}/v1/events",
            params={"mode": "version"},
            headers={"Authorization": f"Bearer {ADMIN}"},
            timeout=10,
        )
        response.raise_for_status()
        result: dict[str, Any] = response.json()
        return result


def tool_spans_json(count: int, *, start: int = 0) -> bytes:
    """An OTLP/JSON request of ``count`` ended ``execute_tool`` spans (distinct ids)."""
    spans = []
    for n in range(start, start + count):
        spans.append(
            {
                "traceId": f"{n + 1:032x}",
                "spanId": f"{n + 1:016x}",
                "name": "execute_tool calc/add",
                "kind": 1,
                "startTimeUnixNano": "1700000000000000000",
                "endTimeUnixNano": "1700000000001000000",
                "attributes": [
                    {"key": "gen_ai.operation.name", "value": {"stringValue": "execute_tool"}},
                    {"key": "gen_ai.tool.name", "value": {"stringValue": "calc/add"}},
                ],
            }
        )
    request = {
        "resourceSpans": [
            {
                "resource": {"attributes": []},
                "scopeSpans": [{"scope": {"name": "agent"}, "spans": spans}],
            }
        ]
    }
    return json.dumps(request).encode()


def post_traces(url: str, body: bytes, *, timeout_s: float = 120.0) -> httpx.Response:
    return httpx.post(
        f"{url}/v1/traces",
        content=body,
        headers={"Content-Type": "application/json", "Authorization": f"Bearer {INGEST}"},
        timeout=timeout_s,
    )
