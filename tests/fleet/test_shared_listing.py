"""``GET /v1/approvals`` of a fleet's instance: the list and the version the page takes as seen
are one read, whatever another instance asks as the list is read. The route (``ApprovalRoutes``)
is driven over ASGI with a real ``SharedApprovalInbox`` on a throwaway PostgreSQL; the other
instance's call is asked (committed, through its own store) right after the route's first read
of the changes, which places it between the route's reads deterministically."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

from otelhooks._actions._approval_inbox import Approval
from otelhooks._store._pg_approval_sql import CHANGES
from otelhooks._store._pg_approvals import SharedApprovalInbox
from otelhooks._store._postgres import PostgresStore
from tests.web.test_inbox_listing import ASK, list_through_the_route


class AskingStore(PostgresStore):
    """A real store whose next read of the approvals' changes made for a request (not by the
    listener of notifications), once :attr:`then` is set, is followed by ``then()``."""

    then: Callable[[], None] | None = None

    def statement(self, sql: bytes, params: Any = (), *, idempotent: bool = False) -> Any:
        rows = super().statement(sql, params, idempotent=idempotent)
        then = self.then
        if (
            then is not None
            and sql == CHANGES
            and threading.current_thread().name != "otelhooks-listen"
        ):
            self.then = None
            then()
        return rows


def test_a_call_asked_through_another_instance_as_the_list_is_read_is_listed_or_not_yet_counted(
    pg_url: str,
) -> None:
    # Before, the route read the list, then read the changes again for the answered ones, then
    # took the version: a call asked through another instance in between was counted in the
    # version and missing from the list; the page took that version as seen and never drew it.
    store, other_store = AskingStore(pg_url), PostgresStore(pg_url)
    try:
        store.migrate()
        inbox, other = SharedApprovalInbox(store), SharedApprovalInbox(other_store)
        first = inbox.request(**ASK, timeout_s=60, default="deny")
        asked: list[Approval] = []
        store.then = lambda: asked.append(
            other.request(**ASK, timeout_s=60, default="allow", args={"c": "rm"})
        )
        listed = list_through_the_route(inbox)
        assert asked, "no call was asked as the list was read: nothing is tested"
        shown = [a["id"] for a in listed["pending"]]
        assert first.id in shown
        inbox.recheck()
        assert asked[0].id in shown or listed["version"] < inbox.version, (
            shown,
            listed["version"],
        )
    finally:
        store.close()
        other_store.close()
