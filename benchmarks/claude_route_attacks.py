"""Issue 34's attacks on ``otelhooks serve``'s Claude Code route, at the issue's sizes.

Run from the repository root::

    python benchmarks/claude_route_attacks.py                 # both attacks
    python benchmarks/claude_route_attacks.py --only memory --requests 600   # a smoke run
    python benchmarks/claude_route_attacks.py --root /path/to/an/older/checkout

A real ``otelhooks serve`` child process on 127.0.0.1 each time.

- **fairness**: a policy that takes 8 s on tool ``Slow``; one session posts 12 (then 24) slow
  ``PreToolUse`` calls at once, then another session posts ``rm -rf /`` (denied by a guard).
  Printed: how long the victim's answer took, and how long until every slow call was answered.
- **memory**: ``--requests`` ``PreToolUse`` calls (6,000 by default), each with a new 50 KB
  ``session_id``; the server's resident memory (``VmRSS``) before and after, and per request.
"""

from __future__ import annotations

import argparse
import os
import re
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx

ADMIN = "bench-admin-token"
HERE = Path(__file__).resolve().parent
ROUTE = "/v1/hooks/claude-code"
AUTH = {"Authorization": f"Bearer {ADMIN}"}
POLICY = """\
hooks:
  - id: no-rm
    type: PreToolUse
    matcher: Bash
    command: >-
      if grep -q 'rm -rf'; then echo 'rm -rf is not allowed here' >&2; exit 2; fi
  - id: slow
    type: PreToolUse
    matcher: Slow
    command: sleep 8
"""


class Serve:
    def __init__(self, root: Path, tmp: Path, *args: str) -> None:
        policy = tmp / "policy.yaml"
        policy.write_text(POLICY)
        self.out = tmp / f"serve-{time.monotonic_ns()}.out"
        env = {**os.environ, "OTELHOOKS_ADMIN_TOKEN": ADMIN, "PYTHONPATH": str(root)}
        with self.out.open("wb") as out:
            self.proc = subprocess.Popen(
                [
                    *(sys.executable, "-m", "otelhooks", "serve", "--port", "0"),
                    *("--hooks", str(policy), *args),
                ],
                stdout=out,
                stderr=subprocess.STDOUT,
                env=env,
                cwd=root,
            )
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            found = re.search(r"listening on (http://\S+) ", self.out.read_text())
            if found:
                self.url = found.group(1)
                return
            time.sleep(0.05)
        raise RuntimeError(self.out.read_text())

    def rss_mb(self) -> float:
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
        return 0.0

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def pre(session: str, use_id: str, tool: str, tool_input: dict[str, Any]) -> dict[str, Any]:
    return {
        "session_id": session,
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_use_id": use_id,
    }


def post(client: httpx.Client, url: str, body: dict[str, Any]) -> httpx.Response:
    return client.post(url + ROUTE, json=body, headers=AUTH, timeout=120)


def fairness(root: Path, tmp: Path, slow_calls: int) -> None:
    server = Serve(root, tmp, "--fail-closed")
    try:
        with httpx.Client() as client, ThreadPoolExecutor(max_workers=slow_calls + 1) as pool:
            slow = [
                pool.submit(post, client, server.url, pre("s-slow", f"t{n}", "Slow", {}))
                for n in range(slow_calls)
            ]
            time.sleep(0.5)
            started = time.monotonic()
            victim = post(client, server.url, pre("s-v", "t-rm", "Bash", {"command": "rm -rf /"}))
            victim_s = time.monotonic() - started
            for future in slow:
                future.result()
            all_s = time.monotonic() - started
        denied = "deny" in victim.text
        print(
            f"fairness: {slow_calls} slow calls of one session: the other session's rm -rf "
            f"answered in {victim_s:.2f} s (denied: {denied}); every slow call answered "
            f"{all_s:.1f} s after it"
        )
    finally:
        server.stop()


def memory(root: Path, tmp: Path, requests: int) -> None:
    server = Serve(root, tmp)
    try:
        with httpx.Client() as client:
            post(client, server.url, pre("warm", "t", "Bash", {"command": "ls"}))
            before = server.rss_mb()
            started = time.monotonic()
            for n in range(requests):
                session = f"{n:08d}" + "s" * 50_000
                response = post(client, server.url, pre(session, "t1", "Bash", {"command": "ls"}))
                if response.status_code != 200:
                    print(f"request {n}: {response.status_code} {response.text[:200]}")
                    break
            wall = time.monotonic() - started
            after = server.rss_mb()
        grown = after - before
        print(
            f"memory: {requests} PreToolUse with 50 KB session ids in {wall:.0f} s: RSS "
            f"{before:.0f} -> {after:.0f} MB (+{grown:.0f} MB, {grown * 1024 / requests:.1f} KB "
            "a request)"
        )
    finally:
        server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=HERE.parent, help="the checkout to run")
    parser.add_argument("--only", choices=("fairness", "memory"))
    parser.add_argument("--requests", type=int, default=6_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        tmp = Path(folder)
        if args.only in (None, "fairness"):
            for calls in (12, 24):
                fairness(args.root, tmp, calls)
        if args.only in (None, "memory"):
            memory(args.root, tmp, args.requests)


if __name__ == "__main__":
    main()
