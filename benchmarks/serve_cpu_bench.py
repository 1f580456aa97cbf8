"""Serve CPU per Claude Code hook event, per thread of one ``otelhooks serve`` (issue #33).

``python benchmarks/serve_cpu_bench.py [--store postgresql://...] [--bursts 10]``: one
``otelhooks serve`` set up as ``fleet_bench.py`` sets each instance up (the durable
``agent_events`` log, the ``PreToolUse`` guard script), a warm-up burst, then ``--bursts``
bursts of ``--sessions`` sessions of ``fleet_bench.py``'s turn (``UserPromptSubmit``,
``--tools`` x (``PreToolUse`` + ``PostToolUse``, none after the denied one), ``Stop``; each
session's connection also sends one untimed ``GET /v1/events?mode=version``). Reported: the
serve process's CPU time (``/proc/<pid>/task/<tid>/stat``, user + system) per hook event, for
the event loop (the main thread), the other threads alive at the end, the threads gone by the
end, and the whole process. ``--pg`` starts a throwaway PostgreSQL cluster (as tests/fleet do)
and runs on it. ``--repeat N`` runs N servers one after the other; ``--pythonpath DIR`` runs
serve from another checkout (the "before" of a comparison).

``--profile DIR``: also run ``py-spy record --native`` on serve for the measured bursts
(needs ``py-spy``; writes ``DIR/serve.<n>.txt``, collapsed stacks).
"""

from __future__ import annotations

import argparse
import json
import os
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

from claude_code_bench import GUARD, _burst, _free_port  # noqa: E402

TOKEN = "bench-token"
TICK = os.sysconf("SC_CLK_TCK")


def _task_cpu(pid: int) -> dict[int, tuple[float, float]]:
    """CPU seconds (user, system) of each live thread of ``pid``."""
    out: dict[int, tuple[float, float]] = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            text = Path(f"/proc/{pid}/task/{tid}/stat").read_text()
        except FileNotFoundError:
            continue
        fields = text.rsplit(")", 1)[1].split()
        out[int(tid)] = (int(fields[11]) / TICK, int(fields[12]) / TICK)
    return out


def _process_cpu(pid: int) -> tuple[float, float]:
    """CPU seconds (user, system) of the whole process, threads that ended included."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) / TICK, int(fields[12]) / TICK


def _start(
    tmp: Path, store: str | None, pythonpath: Path, callgrind: bool
) -> tuple[subprocess.Popen[bytes], str]:
    import httpx

    port = _free_port()
    argv = [sys.executable, "-m", "otelhooks", "serve", "--port", str(port), "--no-web"]
    if callgrind:
        argv = ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *argv]
    argv += ["--hooks", str(tmp / "events.yaml"), "--hooks", str(tmp / "hooks.yaml")]
    if store:
        argv += ["--store", store]
    env = {**os.environ, "PYTHONPATH": str(pythonpath), "OTELHOOKS_ADMIN_TOKEN": TOKEN}
    if callgrind:
        env["PYTHONHASHSEED"] = "0"
    err = subprocess.PIPE if callgrind else subprocess.DEVNULL
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=err)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + (600 if callgrind else 30)
    while True:
        try:
            httpx.get(url + "/v1/events", headers={"Authorization": f"Bearer {TOKEN}"})
            return proc, url
        except httpx.TransportError:
            if time.monotonic() > deadline or proc.poll() is not None:
                raise RuntimeError("serve did not start") from None
            time.sleep(0.05)


def run_once(store: str | None, args: argparse.Namespace, n: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as tmp_name:
        tmp = Path(tmp_name)
        (tmp / "guard.py").write_text(GUARD)
        (tmp / "hooks.yaml").write_text(
            "hooks:\n  - id: no-rm\n    type: PreToolUse\n    matcher: Bash\n"
            f"    script: {tmp / 'guard.py'}:guard\n"
        )
        (tmp / "events.yaml").write_text(
            "kind: agent_events\nname: bench\non: [after_tool_result]\ndurable: true\n"
            f"path: {tmp / 'events.sqlite3'}\nretention: 10000000\n"
        )
        proc, url = _start(tmp, store, args.pythonpath, args.callgrind)
        spy = None
        try:
            _burst(url, args.sessions, args.tools, f"warm{n}")
            before, whole0 = _task_cpu(proc.pid), _process_cpu(proc.pid)
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
            for b in range(args.bursts):
                events += len(_burst(url, args.sessions, args.tools, f"b{n}-{b}"))
            after, whole1 = _task_cpu(proc.pid), _process_cpu(proc.pid)
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
    out: dict[str, Any] = {"events": events}
    for i, kind in ((0, "user"), (1, "sys")):
        main = after[proc.pid][i] - before[proc.pid][i]
        others = sum(
            cpu[i] - before.get(tid, (0.0, 0.0))[i] for tid, cpu in after.items() if tid != proc.pid
        )
        whole = whole1[i] - whole0[i]
        out[kind] = {
            "loop": round(main * per, 3),
            "threads": round(others * per, 3),
            "gone": round((whole - main - others) * per, 3),
            "whole": round(whole * per, 3),
        }
    total = {k: round(out["user"][k] + out["sys"][k], 3) for k in out["user"]}
    return {**out, "total": total}


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
