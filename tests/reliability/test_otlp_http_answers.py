"""What an OTLP/HTTP collector answers, read by otelhooks' exporters: a gzip bomb.

The collector is a real HTTP server on 127.0.0.1; the exporting process is a real Python
process running ``configure()``'s exporters (a hook process's are the same session's).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import otelhooks

BOMB_MIB = 256


def _gzip_bomb(mebibytes: int) -> bytes:
    """``mebibytes`` MiB of zeros, gzipped (about 1 KB a MiB), made a MiB at a time."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    zeros = bytes(1 << 20)
    return b"".join(packer.compress(zeros) for _ in range(mebibytes)) + packer.flush()


@contextmanager
def _bombing_collector() -> Iterator[str]:
    """A collector that keeps every request and answers each with a gzip bomb."""
    bomb = _gzip_bomb(BOMB_MIB)

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length", 0)))
            self.send_response(200)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Encoding", "gzip")
            self.send_header("Content-Length", str(len(bomb)))
            self.end_headers()
            self.wfile.write(bomb)

        def log_message(self, format: str, *args: Any) -> None:
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


_SCRIPT = """
import json, resource, otelhooks
start = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
oh = otelhooks.configure(otlp=True, set_global=False, structured_logging=False)
with oh.operation("agent"):
    pass
report = oh.shutdown(timeout_s=10.0, log=False)
grown = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - start
print(json.dumps({"lines": report.lines(), "grown_mib": grown // 1024}))
"""


def test_a_collectors_gzip_bomb_costs_the_exporting_process_no_memory() -> None:
    # 256 KB on the wire, 256 MiB of zeros once decompressed. Before, requests read and
    # decompressed the whole answer: the process grew by 256 MiB or more (1 GB for a 1 MB
    # bomb, and 20 s in a hook process). An OTLP answer takes a few bytes: past 1 MiB, it is
    # not read.
    with _bombing_collector() as endpoint:
        env = {
            **os.environ,
            "PYTHONPATH": str(Path(otelhooks.__file__).parents[1]),
            "OTEL_EXPORTER_OTLP_ENDPOINT": endpoint,
            "OTEL_EXPORTER_OTLP_PROTOCOL": "http/protobuf",
            "OTEL_METRICS_EXPORTER": "none",
        }
        done = subprocess.run(
            [sys.executable, "-c", _SCRIPT],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )
    assert done.returncode == 0, done.stderr
    said = json.loads(done.stdout.splitlines()[-1])
    assert said["lines"] == [f"1 spans exported to {endpoint}/v1/traces"]
    assert said["grown_mib"] < BOMB_MIB // 4, said
