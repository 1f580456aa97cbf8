"""A traces file never silences a guard.

The command bridge writes spans to ``--traces-out FILE`` under an exclusive ``flock`` on
``FILE.lock``. It used to wait for that lock without end, so a neighbour holding it (a stopped
hook process, a ``flock`` of the user's own) kept the answer until the 25 s answer time: exit 1,
and the ``rm -rf`` ran. And a traces file it could not write was a bridge problem, refused
before any hook ran: exit 1 again. Now the lock is waited for 1 s (the time a hook process gives
any destination), the guard decides in both cases, and the lost spans are one line on stderr
(the one-process bridge) or in the daemon's log. Real processes: ``python -m otelhooks
claude-code``, the hook client and its daemon, and a neighbour holding the lock.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.integrations._daemon_procs import (
    NO_ANSWER,
    NO_RM,
    Hooked,
    bash,
    client_env,
    daemon_pid,
    hook,
    one_process,
)

pytestmark = pytest.mark.timeout(120)

DENIED = "rm -rf is not allowed here"
SHADOWED = "a one-process bridge ran"
# within a few seconds: the lock's 1 s and a process start on a busy machine, far from the 10 s
# answer time these tests set (the bridge that waited for the lock answered then)
PROMPT_S = 6.0
HOLD = """\
import fcntl, sys, time
handle = open(sys.argv[1], "a+b")
fcntl.flock(handle, fcntl.LOCK_EX)
print("held", flush=True)
time.sleep(float(sys.argv[2]))
"""


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "otelhooks.yaml").write_text(NO_RM)
    return tmp_path


class Neighbour:
    """A process holding the exclusive ``flock`` of ``lock`` until it is let go."""

    def __init__(self, lock: Path, seconds: float = 600) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", HOLD, str(lock), str(seconds)],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert self.proc.stdout is not None
        assert self.proc.stdout.readline() == "held\n"

    def let_go(self) -> None:
        self.proc.kill()
        self.proc.wait(timeout=10)


@pytest.fixture
def neighbour(project: Path) -> Iterator[Neighbour]:
    held = Neighbour(project / "traces.jsonl.lock")
    try:
        yield held
    finally:
        held.let_go()


@pytest.fixture
def shadow(tmp_path: Path) -> Path:
    """A ``PYTHONPATH`` on which ``python -m otelhooks`` only says that it ran: an event sent
    with it is answered by the daemon already serving, or says so."""
    package = tmp_path / "shadow" / "otelhooks"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "__main__.py").write_text(f"import sys\nprint({SHADOWED!r}, file=sys.stderr)\n")
    return package.parent


def one_process_deny(project: Path, use_id: str, traces: Path) -> Hooked:
    return one_process(
        project,
        bash(use_id, "rm -rf build"),
        "--traces-out",
        str(traces),
        OTELHOOKS_BRIDGE_DAEMON_ANSWER_S="10",
    )


def tool_spans(traces: Path) -> list[str]:
    """The tool use ids of the spans in ``traces``, each line parsed whole."""
    ids = []
    for line in traces.read_text().splitlines():
        for resource in json.loads(line)["resourceSpans"]:
            for scope in resource["scopeSpans"]:
                for span in scope["spans"]:
                    attrs = {a["key"]: a["value"] for a in span["attributes"]}
                    ids.append(attrs["gen_ai.tool.call.id"]["stringValue"])
    return ids


def daemon_log(runtime_dir: Path) -> str:
    return "".join(p.read_text() for p in runtime_dir.glob("cc-*.log"))


def test_a_neighbour_holding_the_lock_does_not_silence_the_one_process_guard(
    project: Path, neighbour: Neighbour
) -> None:
    traces = project / "traces.jsonl"
    done = one_process_deny(project, "toolu_1", traces)
    assert done.deny_reason() == DENIED
    assert done.seconds < PROMPT_S
    lost = f"otelhooks claude-code: 0 of 1 spans exported to {traces}: {traces}.lock held by "
    assert lost in done.stderr
    assert not traces.exists() or traces.read_text() == ""  # never written without the lock


def test_a_neighbour_holding_the_lock_does_not_silence_the_daemons_guard(
    project: Path, runtime_dir: Path, shadow: Path
) -> None:
    traces = project / "traces.jsonl"
    flags = ("--traces-out", str(traces))
    env = client_env(project, runtime_dir, OTELHOOKS_BRIDGE_DAEMON_ANSWER_S="10")
    assert hook(env, bash("toolu_1", "ls"), *flags).returncode == 0  # starts the daemon
    daemon_pid(runtime_dir)
    later = {**env, "PYTHONPATH": str(shadow)}
    held = Neighbour(project / "traces.jsonl.lock")
    try:
        for use_id in ("toolu_2", "toolu_3"):  # the second pays no wait: the lock is held still
            answered = hook(later, bash(use_id, "rm -rf build"), *flags)
            assert SHADOWED not in answered.stderr
            assert NO_ANSWER not in answered.stderr
            assert answered.deny_reason() == DENIED
            assert answered.seconds < PROMPT_S
    finally:
        held.let_go()
    assert "held by another process" in daemon_log(runtime_dir)
    # free again: the next span is written, whole
    assert hook(later, bash("toolu_4", "rm -rf build"), *flags).deny_reason() == DENIED
    assert tool_spans(traces) == ["toolu_4"]


@pytest.mark.parametrize("where", ["no-such-folder/traces.jsonl", "a-folder"])
def test_a_traces_file_that_cannot_be_written_does_not_silence_the_one_process_guard(
    project: Path, where: str
) -> None:
    (project / "a-folder").mkdir()
    traces = project / where
    done = one_process_deny(project, "toolu_1", traces)
    assert done.deny_reason() == DENIED
    assert f"otelhooks claude-code: 0 of 1 spans exported to {traces}: " in done.stderr


def test_a_traces_file_that_cannot_be_written_does_not_silence_the_daemons_guard(
    project: Path, runtime_dir: Path, shadow: Path
) -> None:
    traces = project / "no-such-folder" / "traces.jsonl"
    flags = ("--traces-out", str(traces))
    env = client_env(project, runtime_dir)
    first = hook(env, bash("toolu_1", "rm -rf build"), *flags)  # the one-process bridge
    assert first.deny_reason() == DENIED
    assert f"0 of 1 spans exported to {traces}: " in first.stderr
    daemon_pid(runtime_dir)
    answered = hook({**env, "PYTHONPATH": str(shadow)}, bash("toolu_2", "rm -rf build"), *flags)
    assert SHADOWED not in answered.stderr
    assert NO_ANSWER not in answered.stderr
    assert answered.deny_reason() == DENIED
    log = daemon_log(runtime_dir)
    assert f"error='{traces}.lock: No such file or directory'" in log
    assert "Traceback" not in log  # the problem, said once, not an exception per span


def test_a_free_lock_still_writes_every_span_whole(project: Path) -> None:
    """The control: hook processes at once, each waiting its turn for the lock."""
    traces = project / "traces.jsonl"
    ids = [f"toolu_{n}" for n in range(6)]
    with ThreadPoolExecutor(len(ids)) as pool:
        done = list(pool.map(lambda use_id: one_process_deny(project, use_id, traces), ids))
    for answered in done:
        assert answered.deny_reason() == DENIED
        assert "spans exported" not in answered.stderr
    assert sorted(tool_spans(traces)) == ids
