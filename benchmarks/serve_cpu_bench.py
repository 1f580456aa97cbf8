"""Serve CPU per Claude Code hook event, per thread of one ``otelhooks serve`` (issue #33).

``python benchmarks/serve_cpu_bench.py [--store postgresql://...] [--bursts 10]``: one
``otelhooks serve`` set up as ``fleet_bench.py`` sets each instance up (the durable
``agent_events`` log, the ``PreToolUse`` guard script), a warm-up burst, then ``--bursts``
bursts of ``--sessions`` sessions of ``fleet_bench.py``'s turn (``UserPromptSubmit``,
``--tools`` x (``PreToolUse`` + ``PostToolUse``, none after the denied one), ``Stop``; each
session's connection also sends one untimed ``GET /v1/events?mode=version``). Reported: the
serve process's CPU time per hook event: the whole process (``/proc/<pid>/stat``, user and
system), the event loop (the main thread) and the other live threads (each thread's
``/proc/<pid>/task/<tid>/schedstat``: the scheduler's nanoseconds; the per-thread ``stat``
figures are clock-tick samples, adjusted per thread, and do not add up to the process's), and
what is left for threads that ended during the run. ``--names`` adds the figure per thread
name (from ``py-spy dump``). ``--floor KIND`` sends requests of one kind instead of turns
(figures per request): a refused hook post (401), ``mode=version``, a ``Notification`` hook
event. ``--pg`` starts a throwaway PostgreSQL cluster (as tests/fleet do) and runs on it.
``--repeat N`` runs N servers one after the other; ``--pythonpath DIR`` runs serve from another
checkout (the "before" of a comparison).

``--profile DIR``: also run ``py-spy record --native`` on serve for the measured bursts
(needs ``py-spy``; writes ``DIR/serve.<n>.txt``, collapsed stacks).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(HERE))

from claude_code_bench import TOKEN, _burst, instance_files, start_serve  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")


def _task_runtime(pid: int) -> dict[int, float]:
    """CPU seconds of each live thread of ``pid`` from the scheduler's own count
    (``schedstat``, nanoseconds: not sampled at clock ticks)."""
    out: dict[int, float] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            out[int(tid)] = (
                int(Path(f"/proc/{pid}/task/{tid}/schedstat").read_text().split()[0]) / 1e9
            )
        except FileNotFoundError:
            continue
    return out


def _switches(pid: int) -> int:
    """Context switches (voluntary and not) of every live thread of ``pid`` so far."""
    total = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            text = Path(f"/proc/{pid}/task/{tid}/status").read_text()
        except FileNotFoundError:
            continue
        total += sum(int(line.split()[1]) for line in text.splitlines() if "ctxt_switches" in line)
    return total


def _process_cpu(pid: int) -> tuple[float, float]:
    """CPU seconds (user, system) of the whole process, threads that ended included."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) / TICK, int(fields[12]) / TICK


def _thread_names(py_spy: str, pid: int) -> dict[int, str]:
    """Thread id to Python thread name, from ``py-spy dump``."""
    text = subprocess.run(
        [py_spy, "dump", "--pid", str(pid)], capture_output=True, text=True, check=False
    ).stdout
    return {int(m[1]): m[2] for m in re.finditer(r'^Thread (\d+) \(\w+\): "([^"]*)"', text, re.M)}


def _start(
    tmp: Path, store: str | None, pythonpath: Path, callgrind: bool
) -> tuple[subprocess.Popen[bytes], str]:
    args = ["--no-web", "--hooks", str(tmp / "events.yaml"), "--hooks", str(tmp / "hooks.yaml")]
    if store:
        args += ["--store", store]
    if not callgrind:
        return start_serve(args, pythonpath=pythonpath)
    return start_serve(
        args,
        pythonpath=pythonpath,
        wrapper=("valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null"),
        env={"PYTHONHASHSEED": "0"},
        stderr=subprocess.PIPE,
        timeout_s=600,
    )


def _floor_client(port: int, kind: str, count: int, barrier: Any, out: Any) -> None:
    import http.client

    conn = http.client.HTTPConnection("127.0.0.1", port)
    token = TOKEN if kind != "refused" else "not-the-token"
    headers = {"Authorization": f"Bearer {token}", "Content-Type": "application/json"}
    event = {"session_id": f"floor-{os.getpid()}", "hook_event_name": "Notification",
             "message": "waiting", "transcript_path": "/tmp/t.jsonl", "cwd": "/tmp"}  # fmt: skip
    body = json.dumps(event).encode()
    barrier.wait()
    for _ in range(count):
        if kind == "version":
            conn.request("GET", "/v1/events?mode=version", headers=headers)
        else:
            conn.request("POST", "/v1/hooks/claude-code", body=body, headers=headers)
        conn.getresponse().read()
    conn.close()
    out.put(count)


def _floor_burst(url: str, kind: str, sessions: int, count: int) -> int:
    """``sessions`` keep-alive connections each sending ``count`` requests of one kind: the
    refused hook post (401: uvicorn, the ASGI app, the token check, the answer), the version
    read, a ``Notification`` hook event (the route's parse and a point event of the bridge)."""
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    barrier, out = ctx.Barrier(sessions), ctx.Queue()
    port = int(url.rsplit(":", 1)[1])
    procs = [
        ctx.Process(target=_floor_client, args=(port, kind, count, barrier, out))
        for _ in range(sessions)
    ]
    for proc in procs:
        proc.start()
    sent = sum(out.get(timeout=300) for _ in procs)
    for proc in procs:
        proc.join()
    return sent


def run_once(store: str | None, args: argparse.Namespace, n: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        instance_files(tmp)
        proc, url = _start(tmp, store, args.pythonpath, args.callgrind)
        spy = None
        try:
            _burst(url, args.sessions, args.tools, f"warm{n}")
            rt0, whole0 = _task_runtime(proc.pid), _process_cpu(proc.pid)
            switches0 = _switches(proc.pid)
            if args.profile:
                args.profile.mkdir(parents=True, exist_ok=True)
                spy = subprocess.Popen(
                    [args.py_spy, "record", *args.spy_flags, "-r", str(args.rate),
                     "--format", "raw", "--threads", "-o", str(args.profile / f"serve.{n}.txt"),
                     "-p", str(proc.pid)],
                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                )  # fmt: skip
                time.sleep(1.0)
            events = 0
            if args.floor:
                _floor_burst(url, args.floor, args.sessions, 20)
                rt0, whole0 = _task_runtime(proc.pid), _process_cpu(proc.pid)
                switches0 = _switches(proc.pid)
                events = _floor_burst(url, args.floor, args.sessions, 10 * args.bursts)
            for b in range(0 if args.floor else args.bursts):
                events += len(_burst(url, args.sessions, args.tools, f"b{n}-{b}"))
            rt1, whole1 = _task_runtime(proc.pid), _process_cpu(proc.pid)
            switches = _switches(proc.pid) - switches0
            names = _thread_names(args.py_spy, proc.pid) if args.names else {}
        finally:
            if spy is not None:
                spy.send_signal(2)
                spy.wait(60)
            proc.terminate()
            _, err = proc.communicate(timeout=600)
    if args.callgrind:
        collected = [line for line in err.decode().splitlines() if "Collected :" in line]
        return {"events": events, "collected": int(collected[-1].split()[-1])}
    per = 1000 / events
    loop = (rt1[proc.pid] - rt0.get(proc.pid, 0.0)) * per
    alive = sum(v - rt0.get(t, 0.0) for t, v in rt1.items()) * per
    user, system = ((whole1[i] - whole0[i]) * per for i in (0, 1))
    out: dict[str, Any] = {
        "events": events,
        "loop_ms": round(loop, 3),
        "other_threads_ms": round(alive - loop, 3),
        # threads that ended during the run (the process's count less the live threads')
        "ended_ms": round(user + system - alive, 3),
        "whole_ms": round(user + system, 3),
        "user_ms": round(user, 3),
        "sys_ms": round(system, 3),
        "switches": round(switches / events, 1),  # of the live threads, per event
    }
    if names:
        by_name: dict[str, float] = {}
        for tid, runtime in rt1.items():
            name = names.get(tid, "?")
            by_name[name] = by_name.get(name, 0.0) + (runtime - rt0.get(tid, 0.0)) * per
        out["threads_by_name"] = {k: round(v, 3) for k, v in sorted(by_name.items()) if v}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--store", help="a postgresql:// URL (default: SQLite)")
    parser.add_argument("--pg", action="store_true", help="start a throwaway cluster and use it")
    parser.add_argument("--bursts", type=int, default=10)
    parser.add_argument("--sessions", type=int, default=16)
    parser.add_argument("--tools", type=int, default=4)
    parser.add_argument("--repeat", type=int, default=1)
    parser.add_argument("--pythonpath", type=Path, default=REPO)
    parser.add_argument("--profile", type=Path)
    parser.add_argument(
        "--floor", choices=["refused", "version", "notification"],
        help="instead of the turns, requests of one kind (per request, not per hook event)",
    )  # fmt: skip
    parser.add_argument("--names", action="store_true", help="CPU per thread name (py-spy dump)")
    parser.add_argument(
        "--callgrind", action="store_true",
        help="run serve under callgrind; prints the process's instructions (run twice with "
        "different --bursts: the difference per event is the figure)",
    )  # fmt: skip
    parser.add_argument("--rate", type=int, default=200)
    parser.add_argument("--spy-flags", type=lambda s: s.split(), default=["--native"])
    parser.add_argument("--py-spy", default=shutil.which("py-spy") or "py-spy")
    args = parser.parse_args()
    with ExitStack() as stack:
        store = args.store
        if args.pg:
            sys.path.insert(0, str(REPO))
            from tests._postgres import postgres_cluster

            store = stack.enter_context(postgres_cluster()).url
        for n in range(args.repeat):
            print(json.dumps({"store": "pg" if store else "sqlite", **run_once(store, args, n)}),
                  flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
