"""Approvals on PostgreSQL: asked through one ``serve`` instance, listed, answered and resolved
through another, decided once, due by the database's clock, and kept across a kill -9."""

from __future__ import annotations

import os
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
from otelhooks._actions._approval_inbox import CLIENT_GONE, InboxFull
from otelhooks._store._pg_approvals import SharedApprovalInbox
from otelhooks._store._postgres import PostgresStore
from tests._postgres import PostgresCluster
from tests.reliability._serve_proc import ADMIN, INGEST, ServeProc

pytestmark = pytest.mark.timeout(180)

TOKEN = "fleet-admin"
AUTH = {"Authorization": f"Bearer {TOKEN}"}
ROUTE = "/v1/hooks/claude-code"
HOOKS = """\
hooks:
  - id: ask-before-shell
    type: PreToolUse
    matcher: Bash
    approval:
      timeout: {timeout}
      default: allow
      reason: a person approves shell commands
"""


def _hooks(tmp: Path, timeout: float = 60) -> Path:
    path = tmp / f"hooks-{timeout:g}.yaml"
    path.write_text(HOOKS.format(timeout=timeout))
    return path


def _pre_tool_use(use_id: str) -> dict[str, Any]:
    return {
        "session_id": f"sess-{use_id}",
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/tmp",
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": "Bash",
        "tool_input": {"command": "rm -rf victim"},
        "tool_use_id": use_id,
    }


def _pending(url: str, headers: dict[str, str] = AUTH, timeout_s: float = 20) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        listed = httpx.get(f"{url}/v1/approvals", headers=headers, timeout=10)
        assert listed.status_code == 200, listed.text
        if listed.json()["pending"]:
            (item,) = listed.json()["pending"]
            return dict(item)
        time.sleep(0.02)
    raise AssertionError(f"no approval became pending on {url}")


class _Held:
    """A Claude Code PreToolUse posted to one instance, its answer kept with when it came."""

    def __init__(self, url: str, use_id: str) -> None:
        self.response: httpx.Response | None = None
        self.at = 0.0
        self._thread = threading.Thread(target=self._post, args=(url, use_id))
        self._thread.start()

    def _post(self, url: str, use_id: str) -> None:
        self.response = httpx.post(
            url + ROUTE, json=_pre_tool_use(use_id), headers=AUTH, timeout=90
        )
        self.at = time.monotonic()

    def join(self) -> httpx.Response:
        self._thread.join(90)
        assert self.response is not None
        return self.response


@pytest.fixture
def pair(pg_url: str, tmp_path: Path) -> Iterator[list[EventLogServer]]:
    made: list[EventLogServer] = []
    try:
        for _ in range(2):
            made.append(serve([_hooks(tmp_path)], token=TOKEN, store=pg_url))
        yield made
    finally:
        for server in made:
            server.stop()


def test_a_call_held_on_one_instance_is_denied_through_another_and_wakes_within_a_second(
    pair: list[EventLogServer],
) -> None:
    a, b = pair
    held = _Held(a.url, "toolu_1")
    item = _pending(b.url)
    assert (item["hook_id"], item["tool"], item["state"]) == ("ask-before-shell", "Bash", "pending")
    answered = httpx.post(
        f"{b.url}/v1/approvals/{item['id']}",
        json={"decision": "deny", "reason": "not on prod", "by": "alice"},
        headers=AUTH,
    )
    assert answered.status_code == 200, answered.text
    at = time.monotonic()
    response = held.join()
    assert held.at - at < 1.0  # woken by the notification, not by a poll
    decision = response.json()["hookSpecificOutput"]
    assert decision["permissionDecision"] == "deny"
    assert "not on prod" in decision["permissionDecisionReason"]
    assert "alice" in decision["permissionDecisionReason"]
    on_a = httpx.get(f"{a.url}/v1/approvals", headers=AUTH).json()
    assert on_a["pending"] == []
    assert [(x["id"], x["state"], x["answered_by"]) for x in on_a["answered"]] == [
        (item["id"], "denied", "alice")
    ]


def test_a_call_retried_through_another_instance_waits_on_the_first_card(
    pg_url: str, tmp_path: Path
) -> None:
    # a load balancer gives up on instance a (its connection to a stays open) and posts the
    # same PreToolUse to b: before, b opened a second card; the person denied the first, the
    # second reached its default (allow) and the rm -rf ran, "approved by timeout"
    hooks = _hooks(tmp_path, timeout=4)
    a, b = (serve([hooks], token=TOKEN, store=pg_url) for _ in range(2))
    try:
        first = _Held(a.url, "toolu_retry")
        card = _pending(b.url)
        retry = _Held(b.url, "toolu_retry")
        denied = httpx.post(
            f"{b.url}/v1/approvals/{card['id']}",
            json={"decision": "deny", "by": "bob"},
            headers=AUTH,
        )
        assert denied.status_code == 200, denied.text
        late = _Held(a.url, "toolu_retry")  # one more, after the answer
        decisions = [
            held.join().json()["hookSpecificOutput"]["permissionDecision"]
            for held in (first, retry, late)
        ]
        listing = httpx.get(f"{a.url}/v1/approvals", headers=AUTH).json()
    finally:
        a.stop()
        b.stop()
    assert decisions == ["deny", "deny", "deny"]
    assert listing["pending"] == []
    assert [(x["id"], x["answered_by"]) for x in listing["answered"]] == [(card["id"], "bob")]


def test_an_instance_stopped_while_it_holds_a_call_withdraws_its_card(
    pg_url: str, tmp_path: Path
) -> None:
    # a restart of the instance holding Claude Code's call: before, the card stayed pending on
    # the fleet and a person's Approve through b was recorded "allowed" for a call whose client
    # had its answer (a failure) from a
    hooks = _hooks(tmp_path)
    a, b = (serve([hooks], token=TOKEN, store=pg_url) for _ in range(2))
    try:
        held = _Held(a.url, "toolu_restart")
        card = _pending(b.url)
        a.stop()
        answer = held.join()  # the approval blocks when it fails: a deny naming the stop
        assert answer.json()["hookSpecificOutput"]["permissionDecision"] == "deny"
        deadline = time.monotonic() + 30
        listed = httpx.get(f"{b.url}/v1/approvals", headers=AUTH).json()
        while listed["pending"] and time.monotonic() < deadline:
            time.sleep(0.05)
            listed = httpx.get(f"{b.url}/v1/approvals", headers=AUTH).json()
        late = httpx.post(
            f"{b.url}/v1/approvals/{card['id']}", json={"decision": "allow"}, headers=AUTH
        )
    finally:
        a.stop()
        b.stop()
    assert listed["pending"] == []
    assert [(x["id"], x["state"], x["answered_by"]) for x in listed["answered"]] == [
        (card["id"], "denied", "asker")
    ]
    assert late.status_code == 409


def test_a_claude_code_hook_that_gives_up_withdraws_its_card_on_every_instance(
    pair: list[EventLogServer],
) -> None:
    # Claude Code's HTTP hook times out (or is interrupted) while instance a holds its call:
    # before, the card stayed pending on the fleet and a person's Approve through b was
    # recorded "allowed" for a call Claude Code no longer waited for
    a, b = pair
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(
            a.url + ROUTE,
            json=_pre_tool_use("toolu_gone"),
            headers=AUTH,
            timeout=httpx.Timeout(5, read=1),
        )
    deadline = time.monotonic() + 30
    listed = httpx.get(f"{b.url}/v1/approvals", headers=AUTH).json()
    while listed["pending"] and time.monotonic() < deadline:
        time.sleep(0.05)
        listed = httpx.get(f"{b.url}/v1/approvals", headers=AUTH).json()
    assert listed["pending"] == []
    (item,) = listed["answered"]
    assert (item["state"], item["answered_by"], item["answer_reason"]) == (
        "denied",
        "asker",
        CLIENT_GONE,
    )
    late = httpx.post(
        f"{b.url}/v1/approvals/{item['id']}", json={"decision": "allow"}, headers=AUTH
    )
    assert late.status_code == 409


ASKER = """\
import sys
from otelhooks.testing import pipeline
hook = {"id": "ask", "type": "before_tool_call", "matcher": "rm",
        "approval": {"timeout": 60, "default": "allow", "url": sys.argv[1]}}
with pipeline(hooks=[hook]) as pipe:
    with pipe.oh.operation("bot") as op, op.step() as step:
        step.run_tool("fs", "rm", {"path": "/data"}, lambda **kw: "ran")
"""


def test_an_asker_killed_outright_has_its_card_withdrawn_on_every_instance(
    pair: list[EventLogServer], tmp_path: Path
) -> None:
    # kill -9 of a process whose call waits on instance a: its long-poll's socket closes.
    # Before, the card waited its 60 s on the fleet and an Approve through b was recorded
    a, b = pair
    script = tmp_path / "asker.py"
    script.write_text(ASKER)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path), "OTELHOOKS_INGEST_TOKEN": TOKEN}
    child = subprocess.Popen([sys.executable, str(script), a.url], env=env)
    try:
        item = _pending(b.url)
        time.sleep(0.5)  # its long-poll is waiting on a
        child.send_signal(signal.SIGKILL)
        child.wait(20)
        deadline = time.monotonic() + 30
        listed = httpx.get(f"{b.url}/v1/approvals", headers=AUTH).json()
        while listed["pending"] and time.monotonic() < deadline:
            time.sleep(0.05)
            listed = httpx.get(f"{b.url}/v1/approvals", headers=AUTH).json()
    finally:
        child.kill()
        child.wait()
    assert listed["pending"] == []
    (got,) = listed["answered"]
    assert (got["id"], got["state"], got["answered_by"]) == (item["id"], "denied", "asker")
    late = httpx.post(
        f"{b.url}/v1/approvals/{item['id']}", json={"decision": "allow"}, headers=AUTH
    )
    assert late.status_code == 409


def test_the_version_the_page_waits_on_is_the_same_on_every_instance(
    pair: list[EventLogServer],
) -> None:
    a, b = pair
    held = _Held(a.url, "toolu_v")
    item = _pending(b.url)
    httpx.post(f"{a.url}/v1/approvals/{item['id']}", json={"decision": "allow"}, headers=AUTH)
    held.join()
    versions = set()
    for server in (a, b):
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            listed = httpx.get(f"{server.url}/v1/approvals", headers=AUTH).json()
            if listed["answered"]:
                versions.add(listed["version"])
                break
            time.sleep(0.02)
    assert len(versions) == 1
    assert versions.pop() > 0


def test_an_approval_is_decided_once_whoever_answers_at_the_same_time(
    pair: list[EventLogServer],
) -> None:
    a, b = pair
    held = _Held(a.url, "toolu_2")
    item = _pending(b.url)
    statuses: list[tuple[str, int]] = []
    lock = threading.Lock()
    start = threading.Barrier(8)

    def answer(server: EventLogServer, decision: str) -> None:
        start.wait()
        got = httpx.post(
            f"{server.url}/v1/approvals/{item['id']}",
            json={"decision": decision, "by": f"{decision}-{server.port}"},
            headers=AUTH,
            timeout=30,
        )
        with lock:
            statuses.append((decision, got.status_code))

    answers = [
        threading.Thread(target=answer, args=(server, decision))
        for server in (a, b)
        for decision in ("allow", "deny", "allow", "deny")
    ]
    for t in answers:
        t.start()
    for t in answers:
        t.join(30)
    won = [d for d, status in statuses if status == 200]
    assert len(won) == 1, statuses
    assert sorted(status for _, status in statuses) == [200] + [409] * 7
    response = held.join()
    decision = response.json().get("hookSpecificOutput", {}).get("permissionDecision")
    assert (decision == "deny") == (won[0] == "deny")
    # a second answer afterwards is a clear conflict, on either instance
    for server in (a, b):
        late = httpx.post(
            f"{server.url}/v1/approvals/{item['id']}", json={"decision": "allow"}, headers=AUTH
        )
        assert (late.status_code, late.json()["error"]) == (409, "answered")


def test_the_answer_is_recorded_once_in_the_shared_event_log(pair: list[EventLogServer]) -> None:
    a, b = pair
    held = _Held(a.url, "toolu_3")
    item = _pending(b.url)
    httpx.post(f"{b.url}/v1/approvals/{item['id']}", json={"decision": "deny"}, headers=AUTH)
    held.join()
    deadline = time.monotonic() + 30
    records: list[dict[str, Any]] = []
    while time.monotonic() < deadline:
        body = httpx.get(f"{a.url}/v1/events", params={"since": 0}, headers=AUTH).json()
        records = [r for r in body["events"] if r["kind"] == "approval"]
        if records:
            break
        time.sleep(0.05)
    time.sleep(0.5)  # a second record, were there one, would be committed by now
    body = httpx.get(f"{b.url}/v1/events", params={"since": 0}, headers=AUTH).json()
    records = [r for r in body["events"] if r["kind"] == "approval"]
    assert len(records) == 1, records
    assert records[0]["detail"].startswith("rejected by api")


def test_a_late_answer_loses_to_the_default_by_the_database_clock(
    pg_url: str, tmp_path: Path
) -> None:
    a = serve([_hooks(tmp_path, timeout=1)], token=TOKEN, store=pg_url)
    b = serve([_hooks(tmp_path, timeout=1)], token=TOKEN, store=pg_url)
    try:
        held = _Held(a.url, "toolu_4")
        item = _pending(b.url)
        assert item["deadline_ms"] - item["created_ms"] == 1000
        response = held.join()
        # default allow: Claude Code gets no objection
        assert response.json().get("hookSpecificOutput", {}).get("permissionDecision") != "deny"
        late = httpx.post(
            f"{b.url}/v1/approvals/{item['id']}", json={"decision": "deny"}, headers=AUTH
        )
        assert late.status_code == 409
        (answered,) = httpx.get(f"{b.url}/v1/approvals", headers=AUTH).json()["answered"]
        assert (answered["state"], answered["answered_by"]) == ("allowed", "timeout")
    finally:
        a.stop()
        b.stop()
    store = PostgresStore(pg_url)
    try:
        (row,) = store.statement(
            b"SELECT answered_ms >= deadline_ms, created_ms, "
            b"(extract(epoch FROM clock_timestamp()) * 1000)::bigint FROM otelhooks_approvals"
        )
    finally:
        store.close()
    assert row[0] is True  # applied when the database's clock said the deadline had passed
    assert abs(row[2] - row[1]) < 60_000


def test_the_pending_bound_holds_for_the_fleet(pg_url: str) -> None:
    stores = [PostgresStore(pg_url), PostgresStore(pg_url)]
    try:
        stores[0].migrate()
        inboxes = [SharedApprovalInbox(s, max_pending=2) for s in stores]
        ask = {"hook_id": "h", "event": "before_tool_call", "tool": "t", "timeout_s": 60}
        inboxes[0].request(**ask, default="deny")
        inboxes[1].request(**ask, default="deny")
        with pytest.raises(InboxFull):
            inboxes[0].request(**ask, default="deny")
        assert len(inboxes[1].pending()) == 2
    finally:
        for s in stores:
            s.close()


def _serve_proc(tmp: Path, store: str) -> ServeProc:
    return ServeProc(tmp, "--store", store, "--hooks", str(_hooks(tmp)))


def _admin(url: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {ADMIN}"}


def test_an_approval_outlives_a_kill_9_of_the_instance_that_answers_it(
    pg_url: str, tmp_path: Path
) -> None:
    a = _serve_proc(tmp_path, pg_url)
    b = _serve_proc(tmp_path, pg_url)
    try:
        asked = httpx.post(
            f"{a.url}/v1/approvals",
            json={"hook_id": "bot", "tool": "deploy", "timeout_s": 120, "default": "deny"},
            headers={"Authorization": f"Bearer {INGEST}"},
        )
        assert asked.status_code == 201, asked.text
        approval = asked.json()["id"]
        assert _pending(b.url, _admin(b.url))["id"] == approval
        b.kill9()
        b = _serve_proc(tmp_path, pg_url)
        assert _pending(b.url, _admin(b.url))["id"] == approval
        waited: dict[str, Any] = {}

        def long_poll() -> None:
            got = httpx.get(
                f"{a.url}/v1/approvals/{approval}",
                params={"wait": "30"},
                headers={"Authorization": f"Bearer {INGEST}"},
                timeout=60,
            )
            waited["body"], waited["at"] = got.json(), time.monotonic()

        poll = threading.Thread(target=long_poll)
        poll.start()
        time.sleep(0.5)  # the long-poll is waiting on a
        answered = httpx.post(
            f"{b.url}/v1/approvals/{approval}",
            json={"decision": "allow", "by": "bob"},
            headers=_admin(b.url),
        )
        assert answered.status_code == 200, answered.text
        at = time.monotonic()
        poll.join(40)
        assert (waited["body"]["state"], waited["body"]["answered_by"]) == ("allowed", "bob")
        assert waited["at"] - at < 1.0
    finally:
        a.stop()
        b.stop()


def test_an_approval_asked_through_an_instance_killed_9_is_answered_through_another(
    pg_url: str, tmp_path: Path
) -> None:
    a = _serve_proc(tmp_path, pg_url)
    b = _serve_proc(tmp_path, pg_url)
    try:
        asked = httpx.post(
            f"{a.url}/v1/approvals",
            json={"hook_id": "bot", "tool": "deploy", "timeout_s": 120, "default": "deny"},
            headers={"Authorization": f"Bearer {INGEST}"},
        )
        approval = asked.json()["id"]
        a.kill9()
        assert _pending(b.url, _admin(b.url))["id"] == approval
        answered = httpx.post(
            f"{b.url}/v1/approvals/{approval}", json={"decision": "deny"}, headers=_admin(b.url)
        )
        assert answered.status_code == 200
        # the asker, retrying its long-poll on the instance still up, reads the answer there
        got = httpx.get(
            f"{b.url}/v1/approvals/{approval}",
            params={"wait": "5"},
            headers={"Authorization": f"Bearer {INGEST}"},
        )
        assert got.json()["state"] == "denied"
    finally:
        a.stop()
        b.stop()


def test_while_postgresql_is_down_the_inbox_answers_503_then_recovers(
    pair: list[EventLogServer], cluster: PostgresCluster
) -> None:
    a, _ = pair
    asked = httpx.post(
        f"{a.url}/v1/approvals",
        json={"hook_id": "bot", "tool": "deploy", "timeout_s": 120, "default": "deny"},
        headers=AUTH,
    )
    approval = asked.json()["id"]
    cluster.stop()
    try:
        listed = httpx.get(f"{a.url}/v1/approvals", headers=AUTH, timeout=30)
        assert listed.status_code == 503
        assert listed.headers["retry-after"] == "1"
        assert "store" in listed.json()["message"]
        # an answer that cannot be committed is not given: never a 200 the store did not keep
        answered = httpx.post(
            f"{a.url}/v1/approvals/{approval}", json={"decision": "allow"}, headers=AUTH
        )
        assert answered.status_code == 503
    finally:
        cluster.start()
    deadline = time.monotonic() + 30
    while True:
        listed = httpx.get(f"{a.url}/v1/approvals", headers=AUTH, timeout=30)
        if listed.status_code == 200:
            break
        assert time.monotonic() < deadline, "the inbox did not recover after the restart"
        time.sleep(0.2)
    assert [x["id"] for x in listed.json()["pending"]] == [approval]
    answered = httpx.post(
        f"{a.url}/v1/approvals/{approval}", json={"decision": "allow"}, headers=AUTH
    )
    assert answered.status_code == 200


def test_a_person_s_answer_outlasts_hundreds_of_defaults_applied_after_it(pg_url: str) -> None:
    # as in serve's own inbox (tests/web/test_inbox_flood.py): anything holding the ingest token
    # can have hundreds of its cards time out between two looks of an asker; before, the fleet
    # kept the newest 200 answers whatever they were, the look got 404 and the call the person
    # approved was blocked
    stores = [PostgresStore(pg_url), PostgresStore(pg_url)]
    try:
        stores[0].migrate()
        asked, flooded = (SharedApprovalInbox(s) for s in stores)
        ask = {"hook_id": "h", "event": "before_tool_call", "tool": "Bash"}
        real = asked.request(**ask, timeout_s=60, default="deny", args={"command": "ls"})
        assert flooded.answer(real.id, "allow", by="alice") is not None
        for _ in range(250):  # each one asked applies the default of the one before
            flooded.request(**ask, timeout_s=0.001, default="deny")
        time.sleep(0.01)
        flooded.pending()  # the last one's default too
        for inbox in (asked, flooded):
            got = inbox.get(real.id)
            assert got is not None
            assert (got.state, got.answered_by) == ("allowed", "alice")
        (kept,) = stores[0].statement(b"SELECT count(*) FROM otelhooks_approvals")
        assert kept[0] == 201  # still bounded: the last 200 defaults and the person's answer
    finally:
        for s in stores:
            s.close()


def test_a_call_refused_by_the_full_fleet_inbox_is_counted_and_moves_the_page(
    pg_url: str,
) -> None:
    # the page says how many calls were refused (each one blocked); it reads the listing again
    # when the version moves
    store = PostgresStore(pg_url)
    try:
        store.migrate()
        inbox = SharedApprovalInbox(store, max_pending=1)
        ask = {"hook_id": "h", "event": "before_tool_call", "tool": "t", "timeout_s": 60}
        inbox.request(**ask, default="deny")
        version = inbox.version
        with pytest.raises(InboxFull):
            inbox.request(**ask, default="deny")
        assert inbox.refused == 1
        assert 0 < inbox.refused_since_ms == inbox.refused_last_ms
        assert inbox.version > version
    finally:
        store.close()


def test_a_default_outlasts_hundreds_of_answers_given_after_it(pg_url: str) -> None:
    # one Deny all gives hundreds of answers; the default applied before them stays readable
    # by its asker (through any instance), as a person's answer outlasts hundreds of defaults
    stores = [PostgresStore(pg_url), PostgresStore(pg_url)]
    try:
        stores[0].migrate()
        asked, answering = (SharedApprovalInbox(s) for s in stores)
        ask = {"hook_id": "h", "event": "before_tool_call", "tool": "Bash"}
        due = asked.request(**ask, timeout_s=0.001, default="allow")
        time.sleep(0.01)
        assert asked.expire(due.id) is not None
        for _ in range(210):
            card = answering.request(**ask, timeout_s=60, default="deny")
            answering.answer(card.id, "deny", by="browser")
        for inbox in (asked, answering):
            got = inbox.get(due.id)
            assert got is not None
            assert (got.state, got.answered_by) == ("allowed", "timeout")
    finally:
        for s in stores:
            s.close()


def test_the_time_left_shown_is_the_database_s_whatever_the_instance_s_clock(
    pg_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # the deadline is the database's clock; an instance whose clock is a minute behind showed a
    # card of 30 s as having 90 s left, and the person who took their time got the default
    skewed = tmp_path / "skewed"
    skewed.mkdir()
    (skewed / "sitecustomize.py").write_text(
        "import time\n"
        "_ns, _s = time.time_ns, time.time\n"
        "time.time_ns = lambda: _ns() - 60_000_000_000\n"
        "time.time = lambda: _s() - 60.0\n"
    )
    right = _serve_proc(tmp_path, pg_url)
    monkeypatch.setenv("PYTHONPATH", f"{skewed}{os.pathsep}{os.environ.get('PYTHONPATH', '')}")
    behind = _serve_proc(tmp_path, pg_url)
    try:
        asked = httpx.post(
            f"{right.url}/v1/approvals",
            json={"hook_id": "bot", "tool": "deploy", "timeout_s": 30, "default": "allow"},
            headers={"Authorization": f"Bearer {INGEST}"},
        )
        assert asked.status_code == 201, asked.text
        for server in (right, behind):
            shown = _pending(server.url, _admin(server.url))
            assert 20 < shown["time_left_s"] <= 30, server.url
    finally:
        right.stop()
        behind.stop()
