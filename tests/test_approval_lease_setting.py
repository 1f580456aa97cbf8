"""``otelhooks serve --approval-lease SECONDS`` (``$OTELHOOKS_APPROVAL_LEASE``, ``serve(...,
approval_lease_s=)``): how long a pending approval lives with none of its askers waiting on it.
A value that is no number, or shorter than an asker's gap between two looks (2 s), is refused at
start, before anything is opened. The lease itself is exercised by the card-asker tests, which
run serve with a short one (``tests/web/test_card_askers.py``, ``tests/fleet``)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from otelhooks import ConfigError, serve

TOKEN = "lease-admin"


@pytest.mark.parametrize("value", [1.0, 0.0, -3.0, float("nan"), float("inf")])
def test_serve_refuses_a_lease_below_two_seconds_or_not_finite(value: float) -> None:
    with pytest.raises(ConfigError, match="approval lease must be at least 2 s"):
        serve(token=TOKEN, port=0, approval_lease_s=value)


@pytest.mark.parametrize(("text", "said"), [("soon", "a number of seconds"), ("1.5", "at least 2")])
def test_serve_refuses_an_environment_lease_it_cannot_use(
    monkeypatch: pytest.MonkeyPatch, text: str, said: str
) -> None:
    monkeypatch.setenv("OTELHOOKS_APPROVAL_LEASE", text)
    with pytest.raises(ConfigError, match=said) as raised:
        serve(token=TOKEN, port=0)
    assert "OTELHOOKS_APPROVAL_LEASE" in str(raised.value)


def test_the_cli_option_is_checked_and_named_in_the_help() -> None:
    env = {**os.environ, "OTELHOOKS_ADMIN_TOKEN": TOKEN}
    command = [sys.executable, "-m", "otelhooks", "serve", "--port", "0"]
    refused = subprocess.run(
        [*command, "--approval-lease", "1"], capture_output=True, text=True, env=env, timeout=60
    )
    assert refused.returncode == 2, refused.stderr
    assert "approval lease must be at least 2 s" in refused.stderr
    helped = subprocess.run(
        [*command, "--help"], capture_output=True, text=True, env=env, timeout=60
    )
    assert "--approval-lease SECONDS" in helped.stdout
    assert "OTELHOOKS_APPROVAL_LEASE" in helped.stdout
