"""Claude Code hooks: the HTTP round trip into ``otelhooks serve`` and the command bridge.

``python benchmarks/claude_code_bench.py`` (bounded: about a minute):

1. **HTTP hooks.** A real ``otelhooks serve`` process on 127.0.0.1 with a ``before_tool_call``
   guard (a script hook that blocks ``rm -rf``) and the default event log. ``--sessions``
   concurrent sessions (each its own process with one keep-alive connection, as each Claude
   Code process holds one) start together and post a whole turn as fast as answers come back:
   ``UserPromptSubmit``, ``--tools`` x (``PreToolUse`` + ``PostToolUse``), ``Stop``. Every
   request's round trip is timed in its session; p50/p99 over all of them, after one warm-up
   burst; and the server's CPU time per request.
2. **Command bridge.** One ``PreToolUse`` event on stdin, timed from spawn to exit, of the hook
   command ``install`` writes (the standard-library client handing the event to its bridge
   daemon, already running) and of the one-process ``python -m otelhooks claude-code``,
   interleaved run by run with a bare ``python -c pass`` (the same interpreter) so all three
   see the same machine load; medians and ratios, plus the first event (which starts the
   daemon).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))  # this checkout's otelhooks, whatever is installed
TOKEN = "bench-token"
GUARD = """\
from otelhooks import Block


def guard(event):
    if "rm -rf" in str(getattr(event, "args", "")):
        return Block("rm -rf is not allowed here")
    return event
"""


def instance_files(tmp: Path) -> None:
    """Write a fleet instance's files into ``tmp``: the guard script, a hooks file running it on
    Bash's ``PreToolUse``, and a durable ``agent_events`` log (so sessions are kept in a SQLite
    file beside it), as ``fleet_bench.py`` and ``serve_cpu_bench.py`` start ``serve``."""
    (tmp / "guard.py").write_text(GUARD)
    (tmp / "hooks.yaml").write_text(
        "hooks:\n  - id: no-rm\n    type: PreToolUse\n    matcher: Bash\n"
        f"    script: {tmp / 'guard.py'}:guard\n"
    )
    (tmp / "events.yaml").write_text(
        "kind: agent_events\nname: bench\non: [after_tool_result]\ndurable: true\n"
        f"path: {tmp / 'events.sqlite3'}\nretention: 10000000\n"
    )


def _session_events(session: str, tools: int) -> list[dict[str, Any]]:
    common = {"session_id": session, "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp"}
    events: list[dict[str, Any]] = [
        {**common, "hook_event_name": "UserPromptSubmit", "prompt": "clean up"}
    ]
    for i in range(tools):
        command = "rm -rf build" if i % 4 == 0 else f"ls dir{i}"
        tool = {"tool_name": "Bash", "tool_input": {"command": command}, "tool_use_id": f"t{i}"}
        events.append({**common, **tool, "hook_event_name": "PreToolUse"})
        if i % 4:  # a denied tool never runs: Claude Code sends no PostToolUse for it (409)
            events.append(
                {**common, **tool, "hook_event_name": "PostToolUse", "tool_response": "ok"}
            )
    events.append({**common, "hook_event_name": "Stop"})
    return events


def _session(url: str, session: str, tools: int, barrier: Any, out: Any) -> None:
    """One Claude Code session: its own process and keep-alive connection, as the real one."""
    import http.client

    host, port = url.removeprefix("http://").split(":")
    conn = http.client.HTTPConnection(host, int(port))
    headers = {"Authorization": f"Bearer {TOKEN}", "Content-Type": "application/json"}
    bodies = [json.dumps(event).encode() for event in _session_events(session, tools)]
    barrier.wait()
    # Connected after the barrier: forking hundreds of sessions can take longer than the
    # server's keep-alive timeout (5 s), which would close a connection opened before it.
    conn.request("GET", "/v1/events?mode=version", headers=headers)  # not timed
    conn.getresponse().read()
    mine: list[float] = []
    for body in bodies:
        t0 = time.perf_counter()
        conn.request("POST", "/v1/hooks/claude-code", body=body, headers=headers)
        response = conn.getresponse()
        response.read()
        mine.append(time.perf_counter() - t0)
        if response.status != 200:
            raise RuntimeError(f"HTTP {response.status}")
    conn.close()
    out.put(mine)


def _burst(url: str, sessions: int, tools: int, tag: str) -> list[float]:
    """All sessions start together (a barrier) and post their turns as fast as answered."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    barrier = ctx.Barrier(sessions)
    out = ctx.Queue()
    procs = [
        ctx.Process(target=_session, args=(url, f"{tag}-{n}", tools, barrier, out))
        for n in range(sessions)
    ]
    for proc in procs:
        proc.start()
    latencies: list[float] = []
    for _ in procs:
        latencies.extend(out.get(timeout=120))
    for proc in procs:
        proc.join()
    return latencies


def start_serve(
    args: list[str],
    *,
    pythonpath: Path = REPO,
    wrapper: tuple[str, ...] = (),
    env: dict[str, str] | None = None,
    stderr: int = subprocess.DEVNULL,
    timeout_s: float = 30.0,
) -> tuple[subprocess.Popen[bytes], str]:
    """Start ``otelhooks serve ARGS`` on a port of its own choosing (under ``wrapper``, e.g.
    valgrind) with the benchmarks' admin token, ``pythonpath``'s otelhooks and ``env``; return
    the process and the URL it says it listens on."""
    # -P: ``-m`` would put the working folder first on sys.path, and a run from a checkout
    # imports that checkout's otelhooks whatever ``pythonpath`` names (its "before" is the after)
    argv = [*wrapper, sys.executable, "-P", "-m", "otelhooks", "serve", "--port", "0", *args]
    full_env = {
        **os.environ,
        "PYTHONPATH": str(pythonpath),
        "OTELHOOKS_ADMIN_TOKEN": TOKEN,
        **(env or {}),
    }
    # port 0 and the URL serve prints: a port picked here and freed could be taken meanwhile;
    # its output goes to a file so nothing has to keep reading a pipe for the run's length
    with tempfile.TemporaryFile() as out:  # the child keeps writing to its own descriptor
        proc = subprocess.Popen(argv, env=full_env, stdout=out, stderr=stderr)
        deadline = time.monotonic() + timeout_s
        while True:
            out.seek(0)
            found = re.search(rb"listening on (http://\S+)", out.read())
            if found:
                return proc, found.group(1).decode()
            if time.monotonic() > deadline or proc.poll() is not None:
                proc.kill()
                raise RuntimeError("serve did not start")
            time.sleep(0.05)


def _cpu_s(pid: int) -> float:
    """CPU seconds (user + system) a process used so far (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def _percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def http_round_trip(sessions: int, tools: int, rounds: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp:
        (Path(tmp) / "guard.py").write_text(GUARD)
        hooks = Path(tmp) / "hooks.yaml"
        hooks.write_text(
            "hooks:\n  - id: no-rm\n    type: PreToolUse\n    matcher: Bash\n"
            f"    script: {Path(tmp) / 'guard.py'}:guard\n"
        )
        proc, url = start_serve(["--hooks", str(hooks)])
        try:
            _burst(url, sessions, tools, "warm")
            cpu_before = _cpu_s(proc.pid)
            latencies: list[float] = []
            for r in range(rounds):
                latencies += _burst(url, sessions, tools, f"r{r}")
            cpu = _cpu_s(proc.pid) - cpu_before
        finally:
            proc.terminate()
            proc.wait(20)
    return {
        "sessions": sessions,
        "requests": len(latencies),
        "p50_ms": round(_percentile(latencies, 0.50) * 1000, 2),
        "p99_ms": round(_percentile(latencies, 0.99) * 1000, 2),
        "max_ms": round(max(latencies) * 1000, 2),
        "server_cpu_ms_per_request": round(cpu / len(latencies) * 1000, 3),
    }


def _timed(argv: list[str], stdin: bytes, env: dict[str, str]) -> float:
    t0 = time.perf_counter()
    subprocess.run(argv, input=stdin, env=env, capture_output=True, check=True)
    return time.perf_counter() - t0


def command_bridge(runs: int) -> dict[str, Any]:
    from otelhooks.integrations.claude_code import hook_client

    with tempfile.TemporaryDirectory() as tmp:
        env = {
            **os.environ,
            "PYTHONPATH": str(REPO),
            "OTELHOOKS_CLAUDE_STATE": str(Path(tmp) / "state.sqlite3"),
            "OTELHOOKS_CLAUDE_DAEMON_IDLE": "30",
            "HOME": tmp,
        }
        event = {
            "session_id": "bench",
            "transcript_path": "/tmp/t.jsonl",
            "cwd": tmp,
            "hook_event_name": "PreToolUse",
            "tool_name": "Bash",
            "tool_input": {"command": "ls"},
            "tool_use_id": "t0",
        }
        stdin = json.dumps(event).encode()
        one_process = [sys.executable, "-m", "otelhooks", "claude-code"]
        client = [sys.executable, "-I", "-S", hook_client.__file__]
        bare = [sys.executable, "-c", "pass"]
        first = _timed(client, stdin, env)  # no daemon yet: starts one, answers in-process
        time.sleep(3)  # the daemon is up
        _timed(client, stdin, env)
        bare_s: list[float] = []
        client_s: list[float] = []
        one_s: list[float] = []
        for _ in range(runs):
            bare_s.append(_timed(bare, b"", env))
            client_s.append(_timed(client, stdin, env))
            one_s.append(_timed(one_process, stdin, env))
    bare_med = statistics.median(bare_s)
    client_med, one_med = statistics.median(client_s), statistics.median(one_s)
    return {
        "runs": runs,
        "python_c_pass_ms": round(bare_med * 1000, 1),
        "hook_client_ms": round(client_med * 1000, 1),
        "hook_client_ratio": round(client_med / bare_med, 2),
        "first_event_ms": round(first * 1000, 1),
        "one_process_bridge_ms": round(one_med * 1000, 1),
        "one_process_ratio": round(one_med / bare_med, 2),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--tools", type=int, default=8)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--only", choices=("http", "bridge"), help="run one of the two parts")
    args = parser.parse_args()
    if args.only != "bridge":
        load = os.getloadavg()[0]
        http = http_round_trip(args.sessions, args.tools, args.rounds)
        print(json.dumps({"http_hooks": http, "load_avg_1m": round(load, 1)}))
    if args.only != "http":
        load = os.getloadavg()[0]
        bridge = command_bridge(args.runs)
        print(json.dumps({"command_bridge": bridge, "load_avg_1m": round(load, 1)}))


if __name__ == "__main__":
    main()
