"""The statements of the Claude Code sessions shared in PostgreSQL, and their rows read back.

One job: the SQL. :class:`~otelhooks._store._pg_sessions.SharedSessions` decides when a change
goes to the store and what happens when it cannot; every statement it sends, and the reading of
the rows they return (start times on this instance's clock), is here, so the statements can be
read together against the tables of migration 7 (``otelhooks_claude_code``) without the
fallback logic between them. Each statement is one round trip, atomic on its own.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from typing import Any, Final

from otelhooks.integrations.coding_agents._state_rows import (
    TURN_KEY,
    UNCOUNTED,
    OpenOperation,
    OpenTool,
    turn_index_of,
)

__all__ = [
    "ADD_CALL",
    "ADD_SPEND",
    "BEGIN_TOOL",
    "BEGIN_UNCOUNTED",
    "CURRENT_OPERATION",
    "END_OPERATION",
    "END_TOOL",
    "FORGET",
    "FORGET_CALLS",
    "FORGET_SPEND",
    "HAS_TOOL",
    "PEEK_OPERATION",
    "READ_SPEND",
    "SESSIONS_SCHEMA",
    "SET_ATTRIBUTES",
    "START_OPERATION",
    "TOOL_SPAN",
    "read_operation",
    "read_tool",
]

SESSIONS_SCHEMA: Final = "otelhooks_claude_code"
_S = SESSIONS_SCHEMA
_OP_COLUMNS: Final = "session_id, operation_id, span_id, start_ns, prompt"
_TOOL_COLUMNS: Final = (
    "session_id, tool_use_id, span_id, parent_span_id, operation_id, start_ns, tool_name, "
    "tool_input, call_index, attributes"
)
_NOW: Final = "EXTRACT(EPOCH FROM clock_timestamp())"
# Start times are the database's clock, one for the fleet, and are read back as their distance
# from it now, which the reader adds to its own clock (_here): a tool use started on one instance
# and ended on another whose clock is behind lasts what it lasted (docs/design.md).
_NOW_NS: Final = "(EXTRACT(EPOCH FROM clock_timestamp()) * 1000000000)::bigint"
_OP_READ: Final = f"session_id, operation_id, span_id, start_ns - {_NOW_NS}, prompt"
_TOOL_READ: Final = _TOOL_COLUMNS.replace("start_ns", f"start_ns - {_NOW_NS}")
_TOUCH: Final = f"""
INSERT INTO {_S}.touched VALUES (%(s)s, {_NOW})
ON CONFLICT (session_id) DO UPDATE SET at = EXCLUDED.at
"""
# The open turn, opened if there is none: the insert's row, or (on conflict) the one there.
CURRENT_OPERATION: Final = f"""
WITH touch AS ({_TOUCH}), new AS (
    INSERT INTO {_S}.operations VALUES (%(s)s, %(op)s, %(span)s, {_NOW_NS}, '')
    ON CONFLICT (session_id) DO NOTHING RETURNING {_OP_COLUMNS}
)
SELECT {_OP_READ} FROM new
UNION ALL SELECT {_OP_READ} FROM {_S}.operations WHERE session_id = %(s)s
""".encode()
# A tool use started in the open turn (opened if there is none: CURRENT_OPERATION's way): the
# recorded one if it exists, else counted and inserted. Nothing is counted unless the turn is
# found, so a race lost (no row) takes no number.
_COUNT: Final = f"""
    INSERT INTO {_S}.counters AS c SELECT %(s)s, 1
    WHERE NOT EXISTS (SELECT 1 FROM old) AND EXISTS (SELECT 1 FROM op)
    ON CONFLICT (session_id) DO UPDATE SET tool_calls = c.tool_calls + 1
    RETURNING c.tool_calls - 1 AS idx
"""
# ... and its tool's calls in the turn (the state file's _COUNT_IN_TURN), kept in its attributes.
_COUNT_IN_TURN: Final = f"""
    INSERT INTO {_S}.tool_turns AS t SELECT %(s)s, %(name)s, op.operation_id, 1 FROM op
    WHERE NOT EXISTS (SELECT 1 FROM old)
    ON CONFLICT (session_id, tool_name) DO UPDATE SET
        calls = CASE WHEN t.operation_id = EXCLUDED.operation_id THEN t.calls + 1 ELSE 1 END,
        operation_id = EXCLUDED.operation_id
    RETURNING json_build_object('{TURN_KEY}', t.calls)::text AS attrs
"""
# An open call that is not a tool use (a model call): inserted without taking an index.
_NO_COUNT: Final = f"SELECT {UNCOUNTED} AS idx WHERE NOT EXISTS (SELECT 1 FROM old)"
_NO_COUNT_IN_TURN: Final = "SELECT '{}' AS attrs"
_BEGIN: Final = f"""
WITH touch AS ({_TOUCH}), opened AS (
    INSERT INTO {_S}.operations VALUES (%(s)s, %(op)s, %(opspan)s, {_NOW_NS}, '')
    ON CONFLICT (session_id) DO NOTHING RETURNING operation_id, span_id
), op AS (
    SELECT operation_id, span_id FROM opened
    UNION ALL SELECT operation_id, span_id FROM {_S}.operations WHERE session_id = %(s)s
), old AS (
    SELECT {_TOOL_COLUMNS} FROM {_S}.tools WHERE session_id = %(s)s AND tool_use_id = %(u)s
), n AS ({{index}}), k AS ({{turn}}), new AS (
    INSERT INTO {_S}.tools
    SELECT %(s)s, %(u)s, %(span)s, op.span_id, op.operation_id, {_NOW_NS}, %(name)s, %(input)s,
        idx, (attrs::jsonb || %(attrs)s::jsonb)::text
    FROM n, k, op ON CONFLICT (session_id, tool_use_id) DO NOTHING RETURNING {_TOOL_COLUMNS}
)
SELECT {_TOOL_READ} FROM new UNION ALL SELECT {_TOOL_READ} FROM old
"""
BEGIN_TOOL: Final = _BEGIN.format(index=_COUNT, turn=_COUNT_IN_TURN).encode()
BEGIN_UNCOUNTED: Final = _BEGIN.format(index=_NO_COUNT, turn=_NO_COUNT_IN_TURN).encode()
# Every session idle past the ttl (and the one asked about, if nothing says when it was used).
FORGET: Final = f"""
WITH idle AS (
    DELETE FROM {_S}.touched WHERE at < {_NOW} - %(ttl)s RETURNING session_id
), gone AS (
    SELECT session_id FROM idle
    UNION SELECT %(s)s WHERE NOT EXISTS (SELECT 1 FROM {_S}.touched WHERE session_id = %(s)s)
), o AS (
    DELETE FROM {_S}.operations WHERE session_id IN (SELECT session_id FROM gone) RETURNING 1
), t AS (
    DELETE FROM {_S}.tools WHERE session_id IN (SELECT session_id FROM gone) RETURNING 1
), c AS (
    DELETE FROM {_S}.counters WHERE session_id IN (SELECT session_id FROM gone) RETURNING 1
), k AS (
    DELETE FROM {_S}.tool_turns WHERE session_id IN (SELECT session_id FROM gone) RETURNING 1
)
SELECT session_id FROM gone
""".encode()
SET_ATTRIBUTES: Final = (
    f"UPDATE {_S}.tools SET attributes = %s WHERE session_id = %s AND tool_use_id = %s".encode()
)
PEEK_OPERATION: Final = f"SELECT {_OP_READ} FROM {_S}.operations WHERE session_id = %s".encode()
HAS_TOOL: Final = f"SELECT 1 FROM {_S}.tools WHERE session_id = %s AND tool_use_id = %s".encode()
TOOL_SPAN: Final = (
    f"SELECT span_id FROM {_S}.tools WHERE session_id = %s AND tool_use_id = %s".encode()
)
# A turn opened and closed: the locked transactions, run by the server (migration 7).
START_OPERATION: Final = (
    f"SELECT {_OP_READ} FROM {_S}.start_operation(%s, %s, %s, {_NOW_NS}, %s)".encode()
)
END_OPERATION: Final = f"SELECT {_OP_READ} FROM {_S}.end_operation(%s)".encode()
_SPEND: Final = "cost_usd, input_tokens, output_tokens, calls, unpriced_calls"
# One model call added to a session's total (not idempotent: run again, it adds again).
ADD_SPEND: Final = f"""
INSERT INTO {_S}.spend AS t VALUES (%(k)s, %(c)s, %(i)s, %(o)s, 1, %(u)s, {_NOW})
ON CONFLICT (key) DO UPDATE SET cost_usd = t.cost_usd + EXCLUDED.cost_usd,
    input_tokens = t.input_tokens + EXCLUDED.input_tokens,
    output_tokens = t.output_tokens + EXCLUDED.output_tokens, calls = t.calls + 1,
    unpriced_calls = t.unpriced_calls + EXCLUDED.unpriced_calls, at = EXCLUDED.at
RETURNING {_SPEND}
""".encode()
# The same for a keyed call: no row when it was added already (see CALL_WINDOW_S).
ADD_CALL: Final = f"""
WITH new AS (
    INSERT INTO {_S}.spend_calls VALUES (%(r)s, {_NOW}) ON CONFLICT DO NOTHING RETURNING 1
)
INSERT INTO {_S}.spend AS t SELECT %(k)s, %(c)s, %(i)s, %(o)s, 1, %(u)s, {_NOW} FROM new
ON CONFLICT (key) DO UPDATE SET cost_usd = t.cost_usd + EXCLUDED.cost_usd,
    input_tokens = t.input_tokens + EXCLUDED.input_tokens,
    output_tokens = t.output_tokens + EXCLUDED.output_tokens, calls = t.calls + 1,
    unpriced_calls = t.unpriced_calls + EXCLUDED.unpriced_calls, at = EXCLUDED.at
RETURNING {_SPEND}
""".encode()
FORGET_CALLS: Final = f"""
DELETE FROM {_S}.spend_calls WHERE at < {_NOW} - %(window)s
    OR key IN (SELECT key FROM {_S}.spend_calls ORDER BY at DESC OFFSET %(max)s)
""".encode()
# After a session's first call: the totals idle past the ttl, and the oldest past the count.
FORGET_SPEND: Final = f"""
DELETE FROM {_S}.spend WHERE at < {_NOW} - %(ttl)s
    OR key IN (SELECT key FROM {_S}.spend ORDER BY at DESC OFFSET %(max)s)
""".encode()
READ_SPEND: Final = f"SELECT {_SPEND} FROM {_S}.spend WHERE key = %s".encode()
END_TOOL: Final = (
    f"DELETE FROM {_S}.tools WHERE session_id = %s AND tool_use_id = %s RETURNING {_TOOL_READ}"
).encode()


def _here(since_ns: int) -> int:
    """A start read as its distance from the database's now: on this instance's clock."""
    return time.time_ns() + int(since_ns)


def read_tool(row: Sequence[Any]) -> OpenTool:
    """The tool use a row of ``BEGIN_TOOL``, ``BEGIN_UNCOUNTED`` or ``END_TOOL`` holds."""
    attributes = json.loads(row[9])
    turn_index = turn_index_of(attributes)
    return OpenTool(
        row[0], row[1], row[2], row[3], row[4], _here(row[5]), row[6],
        json.loads(row[7]), row[8], attributes, turn_index,
    )  # fmt: skip


def read_operation(row: Sequence[Any]) -> OpenOperation:
    """The turn a row of ``CURRENT_OPERATION`` and the other turn statements holds."""
    return OpenOperation(row[0], row[1], row[2], _here(row[3]), row[4])
