"""On a fleet, a card is withdrawn when the last of its askers is gone, on whichever instance
each waits, and after the lease with none waiting on it (by the database's clock); a
PostgreSQL restart does not count as its askers' absence. Real instances on one PostgreSQL,
real asker processes killed with SIGKILL. The instances run with ``--approval-lease`` at
:data:`LEASE` (the operators' setting, 10 s by default): the tests wait out a short lease."""

from __future__ import annotations

import contextlib
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from otelhooks import EventLogServer, serve
from otelhooks._actions._approval_inbox import lapsed_reason
from tests._postgres import PostgresCluster
from tests.reliability._serve_proc import ADMIN, INGEST, ServeProc
from tests.web.test_card_askers import RAW_ASKER

pytestmark = pytest.mark.timeout(120)

LEASE = 4.0  # serve's --approval-lease here: room for a restarted PostgreSQL to be read again

TOKEN = "fleet-admin"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ROUTE = "/v1/hooks/claude-code"
HOOKS = """\
hooks:
  - id: ask-before-shell
    type: PreToolUse
    matcher: Bash
    approval: {timeout: 60, default: deny, reason: a person approves shell commands}
"""


def _pre_tool_use(use_id: str) -> dict[str, Any]:
    return {
        "session_id": f"sess-{use_id}",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/tmp",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "ls"},
        "tool_use_id": use_id,
    }


def _listing(url: str, headers: dict[str, str] = AUTH) -> dict[str, Any]:
    listed = httpx.get(f"{url}/v1/approvals", headers=headers, timeout=30)
    assert listed.status_code == 200, listed.text
    return dict(listed.json())


def _pending(url: str, headers: dict[str, str] = AUTH) -> dict[str, Any]:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        pending = _listing(url, headers)["pending"]
        if pending:
            (item,) = pending
            return dict(item)
        time.sleep(0.02)
    raise AssertionError(f"no approval became pending on {url}")


@pytest.fixture
def pair(pg_url: str, tmp_path: Path) -> Iterator[list[EventLogServer]]:
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(HOOKS)
    made: list[EventLogServer] = []
    try:
        for _ in range(2):
            made.append(serve([hooks], token=TOKEN, store=pg_url, approval_lease_s=LEASE))
        yield made
    finally:
        for server in made:
            server.stop()


def test_the_first_try_giving_up_on_one_instance_leaves_the_card_to_the_retry_on_another(
    pair: list[EventLogServer],
) -> None:
    # a load balancer's first try on a gives up, its retry on b waits on the same card. Before,
    # the first try's connection closing withdrew the card and the retry was denied "by asker"
    a, b = pair
    results: dict[str, Any] = {}

    def post(name: str, url: str, read_s: float) -> None:
        try:
            timeout = httpx.Timeout(5, read=read_s)
            results[name] = httpx.post(
                url + ROUTE, json=_pre_tool_use("toolu_fleet"), headers=AUTH, timeout=timeout
            )
        except httpx.HTTPError as exc:
            results[name] = exc

    first = threading.Thread(target=post, args=("first", a.url, 1.5))
    first.start()
    card = _pending(b.url)
    retry = threading.Thread(target=post, args=("retry", b.url, 60))
    retry.start()
    first.join(10)
    assert isinstance(results["first"], httpx.ReadTimeout)
    time.sleep(1.5)  # the first try's connection closed on a
    still = _listing(b.url)["pending"]
    allowed = httpx.post(
        f"{a.url}/v1/approvals/{card['id']}", json={"decision": "allow"}, headers=AUTH
    )
    retry.join(30)
    assert [x["id"] for x in still] == [card["id"]]
    assert allowed.status_code == 200, allowed.text
    response = results["retry"]
    assert isinstance(response, httpx.Response), response
    assert response.json()["hookSpecificOutput"]["permissionDecision"] == "allow"


def test_an_asker_killed_between_two_looks_has_its_card_withdrawn_by_the_fleet_s_lease(
    pair: list[EventLogServer], tmp_path: Path
) -> None:
    # it looks once a second on a (no room for its long-poll) and is killed in between: no
    # connection closes while an instance listens. Before, the card waited its 60 s and an
    # Approve through b was recorded "allowed" for a call nobody waited for.
    a, b = pair
    script = tmp_path / "raw_asker.py"
    script.write_text(RAW_ASKER)
    child = subprocess.Popen(
        [sys.executable, str(script), a.url, TOKEN, "looks", "deploy"],
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert child.stdout is not None
        card = child.stdout.readline().strip()
        time.sleep(1.5)
        child.send_signal(signal.SIGKILL)
        child.wait(10)
        killed = time.monotonic()
        listed = _listing(b.url)
        assert [x["id"] for x in listed["pending"]] == [card]  # within its lease
        while listed["pending"] and time.monotonic() < killed + LEASE + 5:
            time.sleep(0.2)
            listed = _listing(b.url)
    finally:
        child.kill()
        child.wait()
    took = time.monotonic() - killed
    assert listed["pending"] == [], f"still pending {took:.1f} s after the kill"
    (got,) = listed["answered"]
    assert (got["id"], got["answered_by"], got["answer_reason"]) == (
        card, "asker", lapsed_reason(LEASE)
    )  # fmt: skip
    assert took > LEASE - 2
    late = httpx.post(f"{a.url}/v1/approvals/{card}", json={"decision": "allow"}, headers=AUTH)
    assert late.status_code == 409


def test_a_postgresql_restart_longer_than_the_lease_does_not_withdraw_a_card(
    pair: list[EventLogServer], cluster: PostgresCluster
) -> None:
    # while the database is down no asker can renew a lease (every look is a 503): the lease
    # counts from its start, so the askers get their lease to look again once it is back
    a, b = pair
    asked = httpx.post(
        f"{a.url}/v1/approvals",
        json={"hook_id": "bot", "tool": "deploy", "timeout_s": 120, "default": "deny"},
        headers=AUTH,
    )
    card = asked.json()["id"]
    assert httpx.get(f"{a.url}/v1/approvals/{card}", headers=AUTH).status_code == 200
    cluster.stop()
    try:
        time.sleep(LEASE + 1)
    finally:
        cluster.start()
    deadline = time.monotonic() + 30
    while True:
        listed = httpx.get(f"{b.url}/v1/approvals", headers=AUTH, timeout=30)
        if listed.status_code == 200:
            break
        assert time.monotonic() < deadline, "the inbox did not recover after the restart"
        time.sleep(0.2)
    looked = httpx.get(f"{a.url}/v1/approvals/{card}", headers=AUTH, timeout=30)
    assert [x["id"] for x in listed.json()["pending"]] == [card]
    assert looked.json()["state"] == "pending"


def test_the_hold_of_an_instance_killed_9_lapses_and_a_live_askers_leaving_withdraws_the_card(
    pg_url: str, tmp_path: Path
) -> None:
    # Claude Code's call held on a (its hold counted in the row), a killed with kill -9: its
    # hold never ended. The load balancer's retry on b joins the card and gives up in turn.
    # Before, the dead hold kept the card pending to its 60 s default, approvable through b
    # for a call nobody waited for
    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(HOOKS)
    admin, ingest = ({"Authorization": f"Bearer {t}"} for t in (ADMIN, INGEST))
    lease = ("--approval-lease", f"{LEASE:g}")
    a, b = (ServeProc(tmp_path, "--store", pg_url, "--hooks", str(hooks), *lease) for _ in "ab")
    try:
        first = threading.Thread(
            target=_post_quietly, args=(a.url + ROUTE, ingest, 90), daemon=True
        )
        first.start()
        card = _pending(b.url, admin)
        a.kill9()
        killed = time.monotonic()
        _post_quietly(b.url + ROUTE, ingest, 1.5)  # the retry joins the card, then gives up
        listed = _listing(b.url, admin)
        while listed["pending"] and time.monotonic() < killed + LEASE + 5:
            time.sleep(0.2)
            listed = _listing(b.url, admin)
        took = time.monotonic() - killed
        late = httpx.post(
            f"{b.url}/v1/approvals/{card['id']}", json={"decision": "allow"}, headers=admin
        )
    finally:
        a.stop()
        b.stop()
    assert listed["pending"] == [], f"still pending {took:.1f} s after the kill"
    (got,) = listed["answered"]
    assert (got["id"], got["state"], got["answered_by"]) == (card["id"], "denied", "asker")
    assert late.status_code == 409


def _post_quietly(url: str, headers: dict[str, str], read_s: float) -> None:
    with contextlib.suppress(httpx.HTTPError):
        httpx.post(
            url, json=_pre_tool_use("toolu_killed"), headers=headers,
            timeout=httpx.Timeout(5, read=read_s),
        )  # fmt: skip


def test_an_instance_frozen_inside_a_transaction_holds_the_fleet_s_approvals_a_bounded_while(
    pg_url: str, tmp_path: Path
) -> None:
    # a SIGSTOP (a paused VM, a debugger) of instance a inside an approvals transaction: its
    # connection stays idle in the transaction, holding the approvals' head row. Before, every
    # ask and answer on b failed as busy (a Claude Code call denied as a failing hook) until a
    # resumed, however long that took; the server now ends such a transaction (twice the
    # statement timeout: 1.5 s under --hook-timeout 3)
    import psycopg

    hooks = tmp_path / "hooks.yaml"
    hooks.write_text(HOOKS)
    ingest = {"Authorization": f"Bearer {INGEST}"}
    a, b = (
        ServeProc(tmp_path, "--store", pg_url, "--hooks", str(hooks), "--hook-timeout", "3")
        for _ in range(2)
    )
    stop = threading.Event()

    def ask_on_a() -> None:
        with httpx.Client(timeout=10) as client:
            while not stop.is_set():
                with contextlib.suppress(httpx.HTTPError):
                    client.post(
                        f"{a.url}/v1/approvals",
                        json={"hook_id": "bot", "tool": "x", "timeout_s": 1, "default": "deny"},
                        headers=ingest,
                    )

    askers = [threading.Thread(target=ask_on_a, daemon=True) for _ in range(4)]
    idle = (
        "SELECT count(*) FROM pg_stat_activity WHERE application_name = 'otelhooks' "
        "AND state = 'idle in transaction' AND query LIKE 'UPDATE otelhooks_approvals_head%'"
    )
    try:
        for thread in askers:
            thread.start()
        with psycopg.connect(pg_url, autocommit=True) as admin:
            for _ in range(200):  # until a is caught inside a transaction holding the head row
                time.sleep(0.05)
                a.proc.send_signal(signal.SIGSTOP)
                time.sleep(0.1)
                if admin.execute(idle).fetchone() == (1,):
                    break
                a.proc.send_signal(signal.SIGCONT)
            else:
                raise AssertionError("a was never frozen inside a transaction")
        stop.set()
        frozen = time.monotonic()
        asked = None
        while time.monotonic() < frozen + 10:
            asked = httpx.post(
                f"{b.url}/v1/approvals",
                json={"hook_id": "bot", "tool": "deploy", "timeout_s": 60, "default": "deny"},
                headers=ingest,
                timeout=10,
            )
            if asked.status_code == 201:
                break
        took = time.monotonic() - frozen
    finally:
        stop.set()
        a.proc.send_signal(signal.SIGCONT)
        a.stop()
        b.stop()
    assert asked is not None
    assert asked.status_code == 201, asked.text
    assert took < 6, took
