"""The hook client's process edges: what a coding agent's CLI hands the command hook (its stdin,
its environment) never keeps a guard from answering. Real hook client processes
(``python -I -S hook_client.py``, as ``install`` writes it), the real one-process bridge and
bridge daemon they start."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.integrations._daemon_procs import NO_ANSWER, bash, client_env, daemon_pid, hook

pytestmark = pytest.mark.timeout(120)

# the one-process bridge loads in about 1 s; a loaded runner's margin, under the 25 s answer time
ANSWERED_WITHIN_S = 12.0
# a guard that reads the event on stdin (as the starter guard does: $HOOK_TOOL_INPUT is cut at
# 64 KiB)
NO_RM_ON_STDIN = """\
hooks:
  - id: no-rm
    type: PreToolUse
    matcher: Bash
    command: >-
      grep -q 'rm -rf' && { echo 'rm -rf is not allowed here' >&2; exit 2; }; exit 0
"""


@pytest.mark.parametrize("kib", [80, 4096], ids=["80KiB", "4MiB"])
def test_an_event_larger_than_a_pipe_is_answered_by_the_one_process_bridge(
    tmp_path: Path, runtime_dir: Path, kib: int
) -> None:
    """No daemon listens (the first event, a daemon gone stale after a hooks file was edited,
    a socket folder that is not private): the one-process bridge answers, and gets the whole
    event on its stdin. Before, the client handed it over with ``communicate(timeout=...)``
    retried with no input, which never writes the rest of an input larger than the pipe
    (64 KiB) once the first slice ran out: the bridge waited for the end of its stdin, and the
    client answered at 25 s that the bridge had not started (exit 1: Claude Code ran the
    tool). A ``Write`` of an 80 KB file, a ``Bash`` heredoc: any event past 64 KiB."""
    (tmp_path / "otelhooks.yaml").write_text(NO_RM_ON_STDIN)
    env = client_env(tmp_path, runtime_dir)
    padded = "rm -rf / # " + "x" * (kib * 1024)
    first = hook(env, bash("toolu_1", padded))
    assert first.deny_reason() == "rm -rf is not allowed here", first.stderr
    assert NO_ANSWER not in first.stderr
    assert first.seconds < ANSWERED_WITHIN_S


@pytest.mark.parametrize("value", ["0", "1e-9", "garbage"])
def test_a_stale_answer_clock_in_the_environment_is_not_the_clients(
    tmp_path: Path, runtime_dir: Path, value: str
) -> None:
    """``$OTELHOOKS_BRIDGE_ASKED_AT`` is the hook client's word to the one-process bridge it
    starts after a daemon failed to answer (the answer time ran from the client's start). A
    value the CLI's environment already had (a leftover export, a wrapper's garbage) is no time
    of this client's: before, the client passed it on whenever it had none of its own, and a
    time long past made the bridge answer late at once (exit 1: the tool ran)."""
    (tmp_path / "otelhooks.yaml").write_text(NO_RM_ON_STDIN)
    env = client_env(tmp_path, runtime_dir, OTELHOOKS_BRIDGE_ASKED_AT=value)
    first = hook(env, bash("toolu_1", "rm -rf /"))  # no daemon yet: the one-process bridge
    assert first.deny_reason() == "rm -rf is not allowed here", first.stderr
    assert first.seconds < ANSWERED_WITHIN_S


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("OTEL_ATTRIBUTE_VALUE_LENGTH_LIMIT", "abc"),
        ("OTEL_SPAN_EVENT_COUNT_LIMIT", "-1"),
        ("OTEL_METRICS_EXEMPLAR_FILTER", "traced"),
    ],
    ids=["length-limit", "event-count-limit", "exemplar-filter"],
)
def test_an_otel_setting_the_sdk_cannot_read_never_silences_a_guard(
    tmp_path: Path, runtime_dir: Path, variable: str, value: str
) -> None:
    """Codex CLI and Gemini CLI hand their hooks the ``OTEL_*`` variables of their environment
    (and an export file may set them for Claude Code). The SDK raises ``ValueError`` for a span
    limit (``SpanLimits()``) or an exemplar filter (``MeterProvider``) it cannot read, which a
    provider made without them reads: before, each hook process ended with exit 1 (the
    one-process bridge and the daemon alike) and the CLI ran the tool. Now the variable is
    logged and counts as unset; the guard denies."""
    (tmp_path / "otelhooks.yaml").write_text(NO_RM_ON_STDIN)
    env = client_env(tmp_path, runtime_dir, **{variable: value})
    first = hook(env, bash("toolu_1", "rm -rf /"))  # the one-process bridge
    assert first.deny_reason() == "rm -rf is not allowed here", first.stderr
    assert "invalid environment variable, using default" in first.stderr
    assert variable in first.stderr
    daemon_pid(runtime_dir)
    second = hook(env, bash("toolu_2", "rm -rf /srv"))  # the daemon
    assert second.deny_reason() == "rm -rf is not allowed here", second.stderr
    assert NO_ANSWER not in second.stderr
    (log,) = runtime_dir.glob("cc-*.log")
    assert variable in log.read_text()
