"""The PostgreSQL store's schema: its numbered migrations and the advisory locks they share.

Each migration is applied once, in order, in one transaction under ``MIGRATION_LOCK``
(:meth:`~otelhooks._store._postgres.PostgresStore.migrate`); ``otelhooks_schema`` records each
version applied. A step is never edited once released: a change is a new step.
"""

from __future__ import annotations

from typing import Final

__all__ = ["MIGRATIONS", "MIGRATION_LOCK", "SCHEMA_VERSION", "SESSIONS_LOCK"]

# Any constant both sides agree on: the advisory lock migrations hold.
MIGRATION_LOCK: Final = 0x6F74_6C68_6B73
# The advisory lock every locked change of Claude Code's session state holds (the bridge's
# transactions in _pg_sessions.py and the functions of migration 7).
SESSIONS_LOCK: Final = 0x6F74_6C68_6B63

MIGRATIONS: Final[tuple[tuple[int, str], ...]] = (
    (
        1,
        """
        CREATE TABLE otelhooks_logs (
            name TEXT PRIMARY KEY,
            epoch TEXT NOT NULL,
            head BIGINT NOT NULL DEFAULT 0,
            oldest BIGINT NOT NULL DEFAULT 0
        );
        CREATE TABLE otelhooks_events (
            log TEXT NOT NULL,
            seq BIGINT NOT NULL,
            ts BIGINT NOT NULL,
            agent TEXT NOT NULL,
            session TEXT,
            user_id TEXT,
            tool TEXT,
            kind TEXT NOT NULL,
            mutating BOOLEAN NOT NULL,
            success BOOLEAN NOT NULL,
            args_fp TEXT,
            detail TEXT NOT NULL,
            trace_id TEXT,
            span_id TEXT,
            dedupe TEXT,
            PRIMARY KEY (log, seq)
        );
        CREATE UNIQUE INDEX otelhooks_events_dedupe ON otelhooks_events (log, dedupe)
            WHERE dedupe IS NOT NULL;
        CREATE TABLE otelhooks_outbox (
            id BIGSERIAL PRIMARY KEY,
            hook_id TEXT NOT NULL,
            event_id TEXT NOT NULL,
            event TEXT NOT NULL DEFAULT '',
            config TEXT NOT NULL,
            body BYTEA NOT NULL,
            attempts INTEGER NOT NULL DEFAULT 0,
            next_at DOUBLE PRECISION NOT NULL,
            deadline_at DOUBLE PRECISION NOT NULL,
            leased_until DOUBLE PRECISION NOT NULL DEFAULT 0,
            leased_by TEXT,
            last_error TEXT
        );
        CREATE INDEX otelhooks_outbox_due ON otelhooks_outbox (next_at);
        """,
    ),
    (
        2,
        # Claude Code's session tables, under the names the bridge's SQL uses (its own schema).
        """
        CREATE SCHEMA otelhooks_claude_code;
        CREATE TABLE otelhooks_claude_code.operations (
            session_id   TEXT PRIMARY KEY,
            operation_id TEXT NOT NULL,
            span_id      BIGINT NOT NULL,
            start_ns     BIGINT NOT NULL,
            prompt       TEXT NOT NULL
        );
        CREATE TABLE otelhooks_claude_code.tools (
            session_id     TEXT NOT NULL,
            tool_use_id    TEXT NOT NULL,
            span_id        BIGINT NOT NULL,
            parent_span_id BIGINT NOT NULL,
            operation_id   TEXT NOT NULL,
            start_ns       BIGINT NOT NULL,
            tool_name      TEXT NOT NULL,
            tool_input     TEXT NOT NULL,
            call_index     INTEGER NOT NULL,
            attributes     TEXT NOT NULL,
            PRIMARY KEY (session_id, tool_use_id)
        );
        CREATE TABLE otelhooks_claude_code.counters (
            session_id TEXT PRIMARY KEY,
            tool_calls INTEGER NOT NULL
        );
        """,
    ),
    (
        3,
        # When any instance last used a session (the database's clock): expiry reads it, so
        # no instance deletes a session another one is using.
        """
        CREATE TABLE otelhooks_claude_code.touched (
            session_id TEXT PRIMARY KEY,
            at DOUBLE PRECISION NOT NULL
        );
        CREATE INDEX otelhooks_claude_code_touched_at ON otelhooks_claude_code.touched (at);
        """,
    ),
    (
        4,
        # The approval inbox of the fleet; the head row numbers (and orders) every change.
        """
        CREATE TABLE otelhooks_approvals_head (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            changed BIGINT NOT NULL
        );
        INSERT INTO otelhooks_approvals_head (id, changed) VALUES (1, 0);
        CREATE TABLE otelhooks_approvals (
            id TEXT PRIMARY KEY,
            changed BIGINT NOT NULL,
            hook_id TEXT NOT NULL,
            event TEXT NOT NULL,
            tool TEXT NOT NULL,
            args TEXT NOT NULL,
            agent TEXT NOT NULL,
            session TEXT NOT NULL,
            user_id TEXT NOT NULL,
            trace_id TEXT NOT NULL,
            span_id TEXT NOT NULL,
            created_ms BIGINT NOT NULL,
            deadline_ms BIGINT NOT NULL,
            default_decision TEXT NOT NULL,
            reason TEXT NOT NULL,
            editable BOOLEAN NOT NULL,
            state TEXT NOT NULL DEFAULT 'pending',
            answered_by TEXT NOT NULL DEFAULT '',
            answered_ms BIGINT NOT NULL DEFAULT 0,
            answer_reason TEXT NOT NULL DEFAULT '',
            answer_args TEXT
        );
        CREATE INDEX otelhooks_approvals_changed ON otelhooks_approvals (changed);
        CREATE INDEX otelhooks_approvals_due ON otelhooks_approvals (deadline_ms)
            WHERE state = 'pending';
        """,
    ),
    (
        5,
        # What the web view lists: a summary row per trace, the spans as the page reads them,
        # and which span holds each approval; the head row orders the writers and the bounds.
        """
        CREATE TABLE otelhooks_web_head (
            id INTEGER PRIMARY KEY CHECK (id = 1),
            version BIGINT NOT NULL,
            seq BIGINT NOT NULL,
            n BIGINT NOT NULL,
            traces BIGINT NOT NULL,
            spans BIGINT NOT NULL,
            evicted BIGINT NOT NULL
        );
        INSERT INTO otelhooks_web_head VALUES (1, 0, 0, 0, 0, 0, 0);
        CREATE TABLE otelhooks_web_traces (
            trace_id TEXT PRIMARY KEY,
            seq BIGINT NOT NULL,
            agent TEXT NOT NULL,
            tools TEXT[] NOT NULL,
            decisions TEXT[] NOT NULL,
            errors INTEGER NOT NULL,
            spans INTEGER NOT NULL,
            dropped INTEGER NOT NULL,
            summary TEXT NOT NULL
        );
        CREATE UNIQUE INDEX otelhooks_web_traces_seq ON otelhooks_web_traces (seq);
        CREATE TABLE otelhooks_web_spans (
            trace_id TEXT NOT NULL,
            n BIGINT NOT NULL,
            span_id TEXT NOT NULL,
            service TEXT NOT NULL,
            body TEXT NOT NULL,
            PRIMARY KEY (trace_id, n)
        );
        CREATE TABLE otelhooks_web_approvals (
            approval_id TEXT PRIMARY KEY,
            trace_id TEXT NOT NULL,
            stand_in BIGINT
        );
        CREATE INDEX otelhooks_web_approvals_trace ON otelhooks_web_approvals (trace_id);
        """,
    ),
    (
        6,
        # Each tool's calls in the current turn (LobeHub's callIndex), as the state file's
        # tool_turns: a tool row keeps its own number, this only counts.
        """
        CREATE TABLE otelhooks_claude_code.tool_turns (
            session_id   TEXT NOT NULL,
            tool_name    TEXT NOT NULL,
            operation_id TEXT NOT NULL,
            calls        INTEGER NOT NULL,
            PRIMARY KEY (session_id, tool_name)
        );
        """,
    ),
    (
        7,
        # A turn opened (UserPromptSubmit) and closed (Stop) as one call each: the bridge's
        # locked transaction for it (BEGIN, the lock, its statements, COMMIT: five or six round
        # trips) run by the server. The same statements under the same lock; in READ COMMITTED
        # each statement of a function takes its own snapshot, as each of the transaction did.
        f"""
        CREATE FUNCTION otelhooks_claude_code.start_operation(
            p_session TEXT, p_operation TEXT, p_span BIGINT, p_start BIGINT, p_prompt TEXT
        ) RETURNS SETOF otelhooks_claude_code.operations LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM pg_advisory_xact_lock({SESSIONS_LOCK});
            INSERT INTO otelhooks_claude_code.touched
                VALUES (p_session, EXTRACT(EPOCH FROM clock_timestamp()))
                ON CONFLICT (session_id) DO UPDATE SET at = EXCLUDED.at;
            RETURN QUERY DELETE FROM otelhooks_claude_code.operations o
                WHERE o.session_id = p_session RETURNING o.*;
            INSERT INTO otelhooks_claude_code.operations
                VALUES (p_session, p_operation, p_span, p_start, p_prompt);
            DELETE FROM otelhooks_claude_code.tool_turns t WHERE t.session_id = p_session;
        END $$;
        CREATE FUNCTION otelhooks_claude_code.end_operation(p_session TEXT)
        RETURNS SETOF otelhooks_claude_code.operations LANGUAGE plpgsql AS $$
        BEGIN
            PERFORM pg_advisory_xact_lock({SESSIONS_LOCK});
            DELETE FROM otelhooks_claude_code.tool_turns t WHERE t.session_id = p_session;
            RETURN QUERY DELETE FROM otelhooks_claude_code.operations o
                WHERE o.session_id = p_session RETURNING o.*;
        END $$;
        """,
    ),
    (
        8,
        # A batch of an event log written in one call: the writer's transaction (BEGIN, the
        # log row's lock, the append, COMMIT: four round trips per batch, and a hook event's
        # record is often a batch of one) run by the server. The append is the statement
        # after the lock, so its snapshot holds every record committed before it (the dedupe
        # check is exact), as it was in the transaction. The records: one JSON array of
        # arrays (EventEntry's fields, then the dedupe key), one C-encoded parameter.
        """
        CREATE FUNCTION otelhooks_append(p_log TEXT, p_retention BIGINT, p_rows JSON)
        RETURNS BIGINT LANGUAGE plpgsql AS $$
        DECLARE
            v_head BIGINT;
            v_oldest BIGINT;
            v_written BIGINT;
        BEGIN
            SELECT l.head, l.oldest INTO v_head, v_oldest
                FROM otelhooks_logs l WHERE l.name = p_log FOR UPDATE;
            IF NOT FOUND THEN
                RAISE EXCEPTION 'no event log %', p_log;
            END IF;
            WITH i AS (
                SELECT *, row_number() OVER (PARTITION BY dedupe ORDER BY ord) AS nth FROM (
                    SELECT (r->>0)::bigint AS ts, (r->>1)::text AS agent,
                        (r->>2)::text AS session, (r->>3)::text AS user_id,
                        (r->>4)::text AS tool, (r->>5)::text AS kind,
                        (r->>6)::boolean AS mutating, (r->>7)::boolean AS success,
                        (r->>8)::text AS args_fp, (r->>9)::text AS detail,
                        (r->>10)::text AS trace_id, (r->>11)::text AS span_id,
                        (r->>12)::text AS dedupe, ord
                    FROM json_array_elements(p_rows) WITH ORDINALITY AS j(r, ord)
                ) x
            ), f AS (
                SELECT i.*, row_number() OVER (ORDER BY ord) AS k FROM i
                WHERE dedupe IS NULL OR (nth = 1 AND NOT EXISTS (
                    SELECT 1 FROM otelhooks_events e WHERE e.log = p_log AND e.dedupe = i.dedupe
                ))
            ), n AS (
                SELECT count(*) AS c FROM f
            ), w AS (
                SELECT n.c, v_head + n.c AS head, GREATEST(
                    CASE WHEN v_oldest > 0 THEN v_oldest WHEN n.c > 0 THEN v_head + 1 ELSE 0 END,
                    v_head + n.c - p_retention + 1
                ) AS oldest FROM n
            ), ins AS (
                INSERT INTO otelhooks_events (log, seq, ts, agent, session, user_id, tool, kind,
                    mutating, success, args_fp, detail, trace_id, span_id, dedupe)
                SELECT p_log, v_head + k, ts, agent, session, user_id, tool, kind, mutating,
                    success, args_fp, detail, trace_id, span_id, dedupe
                FROM f, w WHERE v_head + k >= w.oldest
            ), u AS (
                UPDATE otelhooks_logs SET head = w.head, oldest = w.oldest FROM w
                WHERE name = p_log AND w.c > 0
            ), d AS (
                DELETE FROM otelhooks_events WHERE log = p_log AND seq < (
                    SELECT oldest FROM w WHERE c > 0 AND oldest > GREATEST(v_oldest, 1)
                )
            )
            SELECT w.c INTO v_written FROM w;
            IF v_written > 0 THEN
                PERFORM pg_notify('otelhooks_events', p_log);
            END IF;
            RETURN v_written;
        END $$;
        """,
    ),
    (
        9,
        # Each Claude Code session's spend (its api_request events' cost_usd), which a budget
        # guard reads on PreToolUse: kept by the key of its id (a digest), idle ones forgotten.
        """
        CREATE TABLE otelhooks_claude_code.spend (
            key            BYTEA PRIMARY KEY,
            cost_usd       DOUBLE PRECISION NOT NULL,
            input_tokens   BIGINT NOT NULL,
            output_tokens  BIGINT NOT NULL,
            calls          BIGINT NOT NULL,
            unpriced_calls BIGINT NOT NULL,
            at             DOUBLE PRECISION NOT NULL
        );
        CREATE INDEX otelhooks_claude_code_spend_at ON otelhooks_claude_code.spend (at);
        """,
    ),
    (
        10,
        # The keys of the model calls added to a spend recently (a digest of each record), so
        # a client's retry of a request answered 503 does not add its calls twice.
        """
        CREATE TABLE otelhooks_claude_code.spend_calls (
            key BYTEA PRIMARY KEY,
            at  DOUBLE PRECISION NOT NULL
        );
        CREATE INDEX otelhooks_claude_code_spend_calls_at ON otelhooks_claude_code.spend_calls (at);
        """,
    ),
    (
        11,
        # The call an approval was asked for (its session and tool call id): a retry of the
        # same call gets the card of the first ask, on whichever instance it lands.
        """
        ALTER TABLE otelhooks_approvals ADD COLUMN call TEXT NOT NULL DEFAULT '';
        CREATE INDEX otelhooks_approvals_call ON otelhooks_approvals (call) WHERE call <> '';
        """,
    ),
    (
        12,
        # An approval's askers: the holds open on it (long-polls, waiters, on any instance),
        # those of askers gone already, and when one last began or ended (the database's
        # clock): a card goes when its last asker is gone, or when none waited on it for a
        # while (the lease). Cards pending now start their lease now.
        """
        ALTER TABLE otelhooks_approvals ADD COLUMN askers INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE otelhooks_approvals ADD COLUMN leaving INTEGER NOT NULL DEFAULT 0;
        ALTER TABLE otelhooks_approvals ADD COLUMN held_ms BIGINT NOT NULL DEFAULT 0;
        UPDATE otelhooks_approvals
           SET held_ms = (extract(epoch FROM clock_timestamp()) * 1000)::bigint
         WHERE state = 'pending';
        """,
    ),
)
SCHEMA_VERSION: Final = MIGRATIONS[-1][0]
