"""The hook client's and its bridges' last gaps: an event too large, a tuning variable out of
range, an answer nobody heard, a socket folder that is not private, a large event on a guard's
stdin. Real hook client processes (``python -I -S hook_client.py``, as ``install`` writes it),
the real one-process bridge and bridge daemon they start, real command guards."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integrations._daemon_procs import bash, client_env, hook
from tests.reliability.test_hook_client_edges import NO_RM_ON_STDIN

pytestmark = pytest.mark.timeout(180)


def test_a_30_mb_event_on_a_grep_guards_stdin_is_judged_in_time(
    tmp_path: Path, runtime_dir: Path
) -> None:
    """A guard reading the event on its stdin with ``grep -q`` (the starter guard's way). The
    stdin document holds the tool input three times (``args``, ``toolInput``, ``tool_input``):
    a 30 MB ``Write`` is 94 MB there. GNU grep reads a one-line input from a pipe in 64 KiB
    slices and searches the whole line so far after each: 8 s for those 94 MB (0.8 s from a
    file). Before, the guard's 10 s ran out and the bridge answered that the hook failed and
    did not decide (exit 0: Claude Code ran the tool); its deny came after, not applied. Now
    the command reads the event from a memory file and the guard denies."""
    (tmp_path / "otelhooks.yaml").write_text(NO_RM_ON_STDIN)
    env = client_env(tmp_path, runtime_dir)
    big = "rm -rf / # " + "x" * (30 << 20)
    answer = hook(env, bash("toolu_1", big))  # no daemon yet: the one-process bridge
    assert answer.deny_reason() == "rm -rf is not allowed here", answer.stderr[-2000:]
    assert "timed out" not in answer.stderr
