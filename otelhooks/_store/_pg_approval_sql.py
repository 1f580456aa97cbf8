"""The statements of the approval inbox shared in PostgreSQL, and its rows read back.

One job: the SQL. :class:`~otelhooks._store._pg_approvals.SharedApprovalInbox` decides when each
statement runs and keeps this instance's copies of the cards in line; every statement it sends
(each a part of one transaction under the head row's lock, or one on its own) and the reading of
a row into an :class:`Approval` are here, so the rules they carry across instances (the deadline
and the lease by the database's clock, what is pending bounded) read together, apart from the
waiting and waking around them.
"""

from __future__ import annotations

import json
from typing import Any, Final

from otelhooks._actions._approval_card import Approval

__all__ = [
    "ANSWER",
    "CHANGES",
    "EXPIRE",
    "HOLD",
    "INSERT",
    "LEAVE",
    "NEXT",
    "NOTIFY",
    "OF_CALL",
    "OVERDUE",
    "RENEW",
    "TRIM",
    "read_approval",
]

_NOW_MS: Final = "(extract(epoch FROM clock_timestamp()) * 1000)::bigint"
_COLUMNS: Final = (
    "id, changed, hook_id, event, tool, args, agent, session, user_id, trace_id, span_id, "
    "created_ms, deadline_ms, default_decision, reason, editable, state, answered_by, "
    "answered_ms, answer_reason, answer_args, call, askers, leaving, held_ms"
)
# the rule of :func:`lapsed_at` across processes: no hold began, ended or was renewed for
# the inbox's lease_s, in ms (a live instance renews its open holds: a count not renewed is a
# dead instance's), counted from the database's start at the earliest: while it was down no
# asker could renew
_LAPSED: Final = (
    "(greatest(held_ms, (extract(epoch FROM pg_postmaster_start_time()) * 1000)::bigint) "
    f"+ %(lease_ms)s::bigint <= {_NOW_MS})"
)
NEXT: Final = b"UPDATE otelhooks_approvals_head SET changed = changed + 1 RETURNING changed"
INSERT: Final = (
    "INSERT INTO otelhooks_approvals (id, changed, hook_id, event, tool, args, agent, session, "
    "user_id, trace_id, span_id, created_ms, deadline_ms, default_decision, reason, editable, "
    "call, held_ms) SELECT %(id)s, %(changed)s, %(hook_id)s, %(event)s, %(tool)s, %(args)s, "
    "%(agent)s, %(session)s, %(user)s, %(trace_id)s, %(span_id)s, t.now, t.now + "
    "%(timeout_ms)s, %(default)s, %(reason)s, %(editable)s, %(call)s, t.now "
    f"FROM (SELECT {_NOW_MS} AS now) t "
    "WHERE (SELECT count(*) FROM otelhooks_approvals WHERE state = 'pending' "
    f"AND deadline_ms > t.now) < %(max)s RETURNING {_COLUMNS}, {_NOW_MS}"
).encode()
# the cards of a call (read under the head lock, so no other instance asks in between): the
# pending one first, then the newest answer; :func:`joins` picks
OF_CALL: Final = (
    f"SELECT {_COLUMNS}, {_NOW_MS} FROM otelhooks_approvals WHERE call = %(call)s "
    f"AND (state <> 'pending' OR deadline_ms > {_NOW_MS}) "
    "ORDER BY state = 'pending' DESC, changed DESC"
).encode()
ANSWER: Final = (
    "UPDATE otelhooks_approvals SET state = %(state)s, answered_by = %(by)s, "
    f"answered_ms = {_NOW_MS}, answer_reason = %(reason)s, "
    "answer_args = CASE WHEN editable THEN %(args)s::text END, changed = %(changed)s "
    f"WHERE id = %(id)s AND state = 'pending' AND deadline_ms > {_NOW_MS} AND NOT {_LAPSED} "
    f"RETURNING {_COLUMNS}, {_NOW_MS}"
).encode()
# the default of the approvals past their deadline, the withdrawal of those whose lease lapsed
EXPIRE: Final = (
    "UPDATE otelhooks_approvals SET state = CASE WHEN deadline_ms > t.now THEN 'denied' "
    "WHEN default_decision = 'allow' THEN 'allowed' ELSE 'denied' END, answered_by = CASE WHEN "
    "deadline_ms > t.now THEN 'asker' ELSE 'timeout' END, answered_ms = t.now, answer_reason = "
    "CASE WHEN deadline_ms > t.now THEN %(lapsed)s ELSE 'no answer in time' END, "
    f"changed = %(changed)s FROM (SELECT {_NOW_MS} AS now) t WHERE state = 'pending' "
    f"AND (deadline_ms <= t.now OR {_LAPSED}) AND (%(id)s = '' OR id = %(id)s) "
    f"RETURNING {_COLUMNS}, t.now"
).encode()
OVERDUE: Final = (
    f"SELECT EXISTS (SELECT 1 FROM otelhooks_approvals WHERE state = 'pending' "
    f"AND (deadline_ms <= {_NOW_MS} OR {_LAPSED}))"
).encode()
HOLD: Final = (
    f"UPDATE otelhooks_approvals SET askers = askers + 1, held_ms = {_NOW_MS} "
    "WHERE id = %(id)s AND state = 'pending' RETURNING id"
).encode()
RENEW: Final = (
    f"UPDATE otelhooks_approvals SET held_ms = {_NOW_MS} "
    "WHERE id = ANY(%(ids)s) AND state = 'pending'"
).encode()
# a hold ends (``ended``), or an asker whose hold is still open is gone (``polling``): the
# arithmetic of ApprovalInbox.release and withdraw
LEAVE: Final = (
    "UPDATE otelhooks_approvals SET askers = greatest(askers - %(ended)s, 0), leaving = "
    "greatest(0, least(leaving - %(ended)s + %(polling)s, askers - %(ended)s)), "
    f"held_ms = {_NOW_MS} WHERE id = %(id)s AND state = 'pending' RETURNING askers, leaving"
).encode()
# the rule of ApprovalInbox._keep_answered: the last ``keep`` defaults and the last ``keep``
# answers of people, apart
TRIM: Final = (
    b"DELETE FROM otelhooks_approvals WHERE id IN (SELECT id FROM (SELECT id, row_number() "
    b"OVER (PARTITION BY answered_by = 'timeout' ORDER BY changed DESC, id) AS n "
    b"FROM otelhooks_approvals WHERE state <> 'pending') a WHERE n > %(keep)s)"
)
CHANGES: Final = (
    "SELECT h.changed, a.* FROM otelhooks_approvals_head h LEFT JOIN LATERAL "
    f"(SELECT {_COLUMNS}, {_NOW_MS} FROM otelhooks_approvals WHERE changed > %(seen)s "
    "ORDER BY changed LIMIT %(limit)s) a ON true"
).encode()
NOTIFY: Final = b"SELECT pg_notify(%s, 'approvals')"


def read_approval(row: tuple[Any, ...]) -> Approval:
    """An :class:`Approval` of a row in ``_COLUMNS`` order."""
    answer_args = json.loads(row[20]) if row[20] is not None else None
    return Approval(
        id=row[0],
        hook_id=row[2],
        event=row[3],
        tool=row[4],
        args=json.loads(row[5]),
        agent=row[6],
        session=row[7],
        user=row[8],
        trace_id=row[9],
        span_id=row[10],
        created_ms=int(row[11]),
        deadline_ms=int(row[12]),
        default=row[13],
        reason=row[14],
        editable=bool(row[15]),
        state=row[16],
        answered_by=row[17],
        answered_ms=int(row[18]),
        answer_reason=row[19],
        answer_args=answer_args,
        call=row[21],
        askers=int(row[22]),
        leaving=int(row[23]),
        held_ms=int(row[24]),
    )
