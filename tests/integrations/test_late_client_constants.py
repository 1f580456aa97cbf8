"""The hook client's late-answer module is standard library only (loaded by path, before any
otelhooks import), so it keeps its own copies of the bridge's times: they must stay the
bridge's, or the client's own answer would come at another time than the bridge's. And the
one rule for a duration an ``OTELHOOKS_*`` variable sets (``otelhooks._env_seconds``), which
the client's copy follows."""

from __future__ import annotations

import os

import pytest

from otelhooks._env_seconds import BRIDGE_LEAST_S
from otelhooks._export._report import SHUTDOWN_TIMEOUT_ENV, shutdown_timeout
from otelhooks.integrations.claude_code import _late_client
from otelhooks.integrations.claude_code._entries import command_timeout
from otelhooks.integrations.claude_code.hook_client import IDLE_ENV
from otelhooks.integrations.coding_agents import _run
from otelhooks.integrations.coding_agents._guard_time import MARGIN_S


def test_the_clients_copies_are_the_bridges_values() -> None:
    assert _late_client._MARGIN_S == MARGIN_S
    assert _late_client._DEFAULT_ANSWER_S == _run.DEFAULT_ANSWER_S
    assert command_timeout(0) == _late_client._INSTALLED_S
    assert _late_client._ANSWER_ENVS[0] == _run.ANSWER_ENV


# every way an operator's value can be out of range, and values in it
ANSWER_VALUES = [
    "",
    "25",
    "7.5",
    " 3 ",
    "1",
    "0.5",
    "0.0001",
    "1e-300",
    "0",
    "-1",
    "nan",
    "inf",
    "-inf",
    "1e308",
    "9223372036",
    "9223372037",
    "garbage",
]


def test_the_client_reads_the_answer_time_as_the_bridge_does(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The client's own late answer is due at the bridge's answer time: read otherwise (the
    bridge raising ``0.0001`` to its least, the client not), the client answered late first."""
    for value in ANSWER_VALUES:
        monkeypatch.setenv(_run.ANSWER_ENV, value)
        assert _late_client._times([])[0] == _run.answer_seconds(os.environ), value


@pytest.mark.parametrize("value", ["0.0001", "1e-300", "0.5"])
def test_a_bridge_time_under_its_least_is_the_least(value: str) -> None:
    """``OTELHOOKS_BRIDGE_DAEMON_ANSWER_S=0.0001`` made every event late (exit 1: the tool
    ran); ``OTELHOOKS_BRIDGE_DAEMON_IDLE=0.0001`` made the daemon watch its idle time in a
    busy loop and leave after each event. Both are raised to 1 s, and the answer time so set
    is still the time set outright."""
    assert _run.answer_time({_run.ANSWER_ENV: value}) == (BRIDGE_LEAST_S, True)
    assert _run.env_seconds({IDLE_ENV: value}, IDLE_ENV, 900.0) == BRIDGE_LEAST_S


@pytest.mark.parametrize("value", ["1e308", "inf", "nan", "-1", "9223372037"])
def test_a_shutdown_time_no_wait_can_take_is_the_default(
    monkeypatch: pytest.MonkeyPatch, value: str
) -> None:
    """``OTELHOOKS_SHUTDOWN_TIMEOUT=1e308`` passed as a wait raised ``OverflowError`` in the
    bridge's shutdown: its spans were lost."""
    monkeypatch.setenv(SHUTDOWN_TIMEOUT_ENV, value)
    assert shutdown_timeout(1.0) == 1.0
    monkeypatch.setenv(SHUTDOWN_TIMEOUT_ENV, "0")
    assert shutdown_timeout(1.0) == 0.0  # the shortest wait, as documented
