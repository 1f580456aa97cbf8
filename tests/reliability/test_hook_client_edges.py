"""The hook client's process edges: what a coding agent's CLI hands the command hook (its stdin,
its environment) never keeps a guard from answering. Real hook client processes
(``python -I -S hook_client.py``, as ``install`` writes it), the real one-process bridge and
bridge daemon they start."""

from __future__ import annotations

import codecs
import signal
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integrations._daemon_procs import (
    NO_ANSWER,
    bash,
    client_env,
    daemon_pid,
    hook,
    start_hook,
)

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
    (Claude Code removes them). The SDK raises ``ValueError`` for a span
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


SLOW_NO_RM = """\
hooks:
  - id: slow-no-rm
    type: PreToolUse
    matcher: Bash
    command: >-
      sleep 3; grep -q 'rm -rf' && { echo 'rm -rf is not allowed here' >&2; exit 2; }; exit 0
"""


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_a_deny_the_daemon_gives_after_the_cli_killed_the_client_is_said(
    tmp_path: Path, runtime_dir: Path, signum: int
) -> None:
    """A CLI kills a hook at its timeout and goes on: Claude Code and Codex CLI run the tool.
    The daemon's guard still decides, and its span says the call was denied, beside the span
    of the same call's ``PostToolUse`` that ended it a success. Before, nothing said that the
    deny reached nobody; now the daemon logs it as an error naming the event, its call and its
    exit, and counts it (``otelhooks.dropped``, reason ``client_gone``)."""
    (tmp_path / "otelhooks.yaml").write_text(SLOW_NO_RM)
    env = client_env(tmp_path, runtime_dir)
    assert hook(env, bash("toolu_0", "ls")).returncode == 0  # starts the daemon
    daemon_pid(runtime_dir)
    started = start_hook(env, bash("toolu_1", "rm -rf victim"))
    (log,) = runtime_dir.glob("cc-*.log")
    kill_and_read_the_unheard_deny(started[0], signum, log)
    # the next event of the session is answered as ever
    assert hook(env, bash("toolu_2", "rm -rf /")).deny_reason() == "rm -rf is not allowed here"
    assert log.read_text().count("reached nobody") == 1  # an answer heard is not said


def test_an_export_file_saved_with_a_byte_order_mark_is_read(
    tmp_path: Path, runtime_dir: Path
) -> None:
    """Windows editors save UTF-8 with a byte order mark (Notepad's "UTF-8 with BOM",
    PowerShell 5's ``Out-File -Encoding utf8``). Before, the bridge read ``otelhooks.env``'s
    first key with the mark in front, refused the file (``expected KEY=VALUE``) and every hook
    process exited 1: the CLI ran every tool. Now the mark is read as what it is; the file's
    settings apply and the guard denies, through the one-process bridge and the daemon."""
    (tmp_path / "otelhooks.yaml").write_text(NO_RM_ON_STDIN)
    (tmp_path / "otelhooks.env").write_bytes(
        "\ufeffOTELHOOKS_BRIDGE_DAEMON_IDLE=45\nOTEL_SERVICE_NAME=team-agent\n".encode()
    )
    env = client_env(tmp_path, runtime_dir)
    del env["OTELHOOKS_BRIDGE_DAEMON_IDLE"]  # the file's, then
    first = hook(env, bash("toolu_1", "rm -rf /"))  # the one-process bridge
    assert first.deny_reason() == "rm -rf is not allowed here", first.stderr
    pid = daemon_pid(runtime_dir)
    second = hook(env, bash("toolu_2", "rm -rf /srv"))  # the daemon
    assert second.deny_reason() == "rm -rf is not allowed here", second.stderr
    # the file's first setting reached the daemon the client started
    assert b"OTELHOOKS_BRIDGE_DAEMON_IDLE=45" in Path(f"/proc/{pid}/environ").read_bytes()


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-be", "utf-32"])
def test_a_hooks_file_saved_as_utf_16_or_32_with_its_mark_is_read(
    tmp_path: Path, runtime_dir: Path, encoding: str
) -> None:
    """Windows PowerShell 5's ``>`` and Notepad's "Unicode" save UTF-16 with a byte order mark,
    which YAML reads (as it reads UTF-32). Before, the hooks file was refused as "not UTF-8
    text" and every hook process exited 1: the CLI ran the tool the guard denies."""
    text = NO_RM_ON_STDIN
    if encoding == "utf-16-be":
        raw = codecs.BOM_UTF16_BE + text.encode("utf-16-be")
    else:
        raw = text.encode(encoding)  # Python writes the mark, in the machine's order
    (tmp_path / "otelhooks.yaml").write_bytes(raw)
    env = client_env(tmp_path, runtime_dir)
    answer = hook(env, bash("toolu_1", "rm -rf /"))
    assert answer.deny_reason() == "rm -rf is not allowed here", answer.stderr


def kill_and_read_the_unheard_deny(client: Any, signum: int, log: Path) -> None:
    """Kill the hook client as the CLI does at its timeout (a second in, before its guard's 3 s
    answer), then read the bridge's log line saying the deny of ``toolu_1`` reached nobody."""
    time.sleep(1.0)  # the CLI's timeout, shorter than the guard's 3 s
    client.send_signal(signum)
    assert client.wait(timeout=10) == -signum
    deadline = time.monotonic() + 30
    while "reached nobody" not in log.read_text() and time.monotonic() < deadline:
        time.sleep(0.1)
    (said,) = [line for line in log.read_text().splitlines() if "reached nobody" in line]
    assert "hook_event=PreToolUse" in said
    assert "tool_use_id=toolu_1" in said
    assert "exit_code=0" in said  # Claude Code's deny: exit 0, the JSON on stdout
    assert "deny" in said
