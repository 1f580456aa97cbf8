"""A command hook killed by its CLI while the bridge daemon holds its call for a person: the
card is withdrawn, so nobody approves a call the CLI already ran or refused. Real hook client
processes, a real daemon, a real serve listing the card."""

from __future__ import annotations

import signal
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from otelhooks import EventLogServer, serve
from otelhooks._actions._approval_inbox import WITHDRAWN
from tests.integrations._daemon_procs import bash, client_env, daemon_pid, finish, start_hook
from tests.web.conftest import clearing_inbox

pytestmark = pytest.mark.timeout(90)

TOKEN = "daemon-admin-t0ken"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
HOLD_BASH = """\
hooks:
  - id: ask-before-shell
    type: PreToolUse
    matcher: Bash
    approval:
      timeout: 60
      default: deny
      url: {url}
"""


@pytest.fixture
def server() -> Iterator[EventLogServer]:
    with clearing_inbox(serve(token=TOKEN), AUTH) as started:
        yield started


def _card(admin: httpx.Client, session: str, state: str) -> dict[str, Any]:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        listing = admin.get("/v1/approvals").json()
        cards = [a for a in listing["pending"] + listing["answered"] if a["session"] == session]
        if cards and cards[0]["state"] == state:
            return dict(cards[0])
        time.sleep(0.05)
    raise AssertionError(f"no card of {session} is {state}")


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["term", "kill"])
def test_a_hook_client_killed_at_its_timeout_withdraws_the_daemon_s_card(
    server: EventLogServer, tmp_path: Path, runtime_dir: Path, sig: signal.Signals
) -> None:
    # before: the daemon kept asking for the killed client; the card waited its 60 s and a
    # person's Approve was recorded "allowed" for a call the CLI had gone on without
    (tmp_path / "otelhooks.yaml").write_text(HOLD_BASH.format(url=server.url))
    env = client_env(tmp_path, runtime_dir, OTELHOOKS_INGEST_TOKEN=TOKEN)
    session = f"s-{sig.name}"
    read = {**bash("toolu_0", "", session="s-warm"), "tool_name": "Read", "tool_input": {}}
    warm = finish(start_hook(env, read))  # answered meanwhile; starts the daemon
    assert warm.returncode == 0, warm.stderr
    daemon = daemon_pid(runtime_dir)
    proc, at = start_hook(env, bash("toolu_1", "rm -rf victim", session=session))
    with httpx.Client(base_url=server.url, headers=AUTH) as admin:
        card = _card(admin, session, "pending")
        proc.send_signal(sig)  # the CLI's hook timeout
        finish((proc, at))
        got = _card(admin, session, "denied")
        late = admin.post(f"/v1/approvals/{card['id']}", json={"decision": "allow"})
    # withdrawn through serve's DELETE (the daemon asks there): its reason is serve's
    assert (got["id"], got["answered_by"], got["answer_reason"]) == (card["id"], "asker", WITHDRAWN)
    assert late.status_code == 409
    assert daemon_pid(runtime_dir) == daemon  # the daemon serves on


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["term", "kill"])
def test_a_hook_client_killed_at_its_timeout_withdraws_the_one_process_bridge_s_card(
    server: EventLogServer, tmp_path: Path, runtime_dir: Path, sig: signal.Signals
) -> None:
    # The first event of a fresh socket folder is answered by the one-process bridge, a child of
    # the hook client. Before, the killed client left it running and asking: the card waited its
    # 60 s and a person's Approve was recorded "allowed" for a call nobody waited for.
    (tmp_path / "otelhooks.yaml").write_text(HOLD_BASH.format(url=server.url))
    env = client_env(tmp_path, runtime_dir, OTELHOOKS_INGEST_TOKEN=TOKEN)
    session = f"s-one-{sig.name}"
    proc, at = start_hook(env, bash("toolu_1", "rm -rf victim", session=session))
    with httpx.Client(base_url=server.url, headers=AUTH) as admin:
        card = _card(admin, session, "pending")
        proc.send_signal(sig)  # the CLI's hook timeout
        finish((proc, at))
        got = _card(admin, session, "denied")
        late = admin.post(f"/v1/approvals/{card['id']}", json={"decision": "allow"})
    assert (got["id"], got["answered_by"], got["answer_reason"]) == (card["id"], "asker", WITHDRAWN)
    assert late.status_code == 409
