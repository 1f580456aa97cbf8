"""The hook client's late-answer module is standard library only (loaded by path, before any
otelhooks import), so it keeps its own copies of the bridge's times: they must stay the
bridge's, or the client's own answer would come at another time than the bridge's."""

from __future__ import annotations

from otelhooks.integrations.claude_code import _late_client
from otelhooks.integrations.claude_code._entries import command_timeout
from otelhooks.integrations.coding_agents import _run
from otelhooks.integrations.coding_agents._guard_time import MARGIN_S


def test_the_clients_copies_are_the_bridges_values() -> None:
    assert _late_client._MARGIN_S == MARGIN_S
    assert _late_client._DEFAULT_ANSWER_S == _run.DEFAULT_ANSWER_S
    assert command_timeout(0) == _late_client._INSTALLED_S
    assert _late_client._ANSWER_ENVS[0] == _run.ANSWER_ENV
