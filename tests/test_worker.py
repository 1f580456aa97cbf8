"""Tests for otelhooks._worker.BoundedWorker."""

from __future__ import annotations

import os
import threading
import warnings
from collections.abc import Iterator

import pytest
from opentelemetry.context import _SUPPRESS_INSTRUMENTATION_KEY, get_value
from structlog.testing import capture_logs

from otelhooks._worker import BoundedWorker

# Long enough that nothing is handled by the timer during a test unless it flushes.
NEVER = 60.0


class Recorder:
    """A handle_batch that records batches and can be held shut by a gate."""

    def __init__(self) -> None:
        self.batches: list[list[object]] = []
        self.entered = threading.Event()
        self.gate = threading.Event()
        self.gate.set()

    def __call__(self, batch: list[object]) -> None:
        self.entered.set()
        self.gate.wait(10)
        self.batches.append(batch)

    @property
    def items(self) -> list[object]:
        return [item for batch in self.batches for item in batch]


@pytest.fixture
def recorder() -> Iterator[Recorder]:
    rec = Recorder()
    yield rec
    rec.gate.set()


def worker_threads(name: str) -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == name]


def test_items_are_handled_in_submission_order(recorder: Recorder) -> None:
    worker = BoundedWorker[object]("order", recorder, max_batch_size=64)
    for i in range(5_000):
        worker.submit(i)
    assert worker.flush(5)
    assert recorder.items == list(range(5_000))
    worker.shutdown()


def test_items_from_many_producers_are_all_handled_in_each_producers_order() -> None:
    handled: list[tuple[int, int]] = []
    worker = BoundedWorker[tuple[int, int]]("producers", handled.extend, max_batch_size=50)

    def produce(producer: int) -> None:
        for i in range(2_000):
            worker.submit((producer, i))

    threads = [threading.Thread(target=produce, args=(p,)) for p in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert worker.flush(5)
    for producer in range(8):
        assert [i for p, i in handled if p == producer] == list(range(2_000))
    worker.shutdown()


def test_batches_never_exceed_max_batch_size(recorder: Recorder) -> None:
    worker = BoundedWorker[object]("batches", recorder, max_batch_size=7, schedule_delay_s=NEVER)
    for i in range(100):
        worker.submit(i)
    assert worker.flush(5)
    sizes = [len(batch) for batch in recorder.batches]
    assert max(sizes) == 7
    assert sum(sizes) == 100
    worker.shutdown()


def test_full_batch_is_handled_without_waiting_for_the_timer(recorder: Recorder) -> None:
    worker = BoundedWorker[object]("fullbatch", recorder, max_batch_size=4, schedule_delay_s=NEVER)
    for i in range(4):
        worker.submit(i)
    assert recorder.entered.wait(5)
    worker.shutdown()


def test_partial_batch_is_handled_after_schedule_delay(recorder: Recorder) -> None:
    worker = BoundedWorker[object]("timer", recorder, max_batch_size=100, schedule_delay_s=0.01)
    worker.submit("only")
    assert recorder.entered.wait(5)
    worker.shutdown()


def test_full_queue_drops_new_items_and_reports_each(recorder: Recorder) -> None:
    drops: list[tuple[int, str]] = []
    worker = BoundedWorker[object](
        "full",
        recorder,
        max_queue_size=10,
        max_batch_size=10,
        schedule_delay_s=0.0,
        on_drop=lambda count, reason: drops.append((count, reason)),
    )
    recorder.gate.clear()
    worker.submit("in-flight")
    assert recorder.entered.wait(5)  # the worker now holds it, so the queue is empty
    accepted = [worker.submit(i) for i in range(15)]

    assert accepted == [True] * 10 + [False] * 5
    assert drops == [(1, "queue_full")] * 5
    assert worker.dropped == 5
    assert worker.queued == 10
    assert worker.offered == 16  # kept or dropped, every item offered counts
    recorder.gate.set()
    assert worker.flush(5)
    assert recorder.items == ["in-flight", *range(10)]  # the first queued were kept
    worker.shutdown()


def test_a_shut_down_worker_refuses_and_counts_what_it_is_offered(recorder: Recorder) -> None:
    drops: list[tuple[int, str]] = []
    worker = BoundedWorker[object](
        "refuses", recorder, on_drop=lambda count, reason: drops.append((count, reason))
    )
    assert worker.submit("kept")
    assert worker.shutdown(5)
    assert not worker.submit("late")
    assert drops == [(1, "shutdown")]
    assert (worker.offered, worker.dropped, worker.room) == (2, 1, 0)
    assert recorder.items == ["kept"]


def test_flush_waits_until_submitted_items_are_handled(recorder: Recorder) -> None:
    worker = BoundedWorker[object]("flush", recorder, max_batch_size=1000, schedule_delay_s=NEVER)
    for i in range(10):
        worker.submit(i)
    assert worker.flush(5)
    assert recorder.items == list(range(10))
    worker.shutdown()


def test_flush_returns_false_when_deadline_passes(recorder: Recorder) -> None:
    worker = BoundedWorker[object]("deadline", recorder, schedule_delay_s=0.0)
    recorder.gate.clear()
    worker.submit(1)
    assert recorder.entered.wait(5)
    assert not worker.flush(0.05)
    recorder.gate.set()
    assert worker.flush(5)
    worker.shutdown()


def test_flush_before_any_submit_returns_true_at_once() -> None:
    worker = BoundedWorker[object]("empty", lambda batch: None)
    assert worker.flush(0)


def test_shutdown_flushes_then_drops_later_submits(recorder: Recorder) -> None:
    drops: list[tuple[int, str]] = []
    worker = BoundedWorker[object](
        "shutdown",
        recorder,
        schedule_delay_s=NEVER,
        on_drop=lambda count, reason: drops.append((count, reason)),
    )
    for i in range(3):
        worker.submit(i)
    assert worker.shutdown(5)
    assert recorder.items == [0, 1, 2]
    assert not worker_threads("shutdown")

    assert worker.submit("late") is False
    assert drops == [(1, "shutdown")]
    assert worker.dropped == 1


def test_shutdown_past_deadline_drops_what_is_still_queued(recorder: Recorder) -> None:
    drops: list[tuple[int, str]] = []
    worker = BoundedWorker[object](
        "abandon",
        recorder,
        max_batch_size=1,
        schedule_delay_s=0.0,
        on_drop=lambda count, reason: drops.append((count, reason)),
    )
    recorder.gate.clear()
    for i in range(4):
        worker.submit(i)
    assert recorder.entered.wait(5)
    assert worker.shutdown(0.05) is False
    assert drops == [(3, "shutdown")]
    assert worker.dropped == 3


def test_raising_handler_does_not_stop_the_worker_and_its_batch_counts_as_dropped() -> None:
    handled: list[object] = []
    drops: list[tuple[int, str]] = []

    def handle(batch: list[object]) -> None:
        if "bad" in batch:
            raise RuntimeError("boom")
        handled.extend(batch)

    worker = BoundedWorker[object](
        "raising", handle, schedule_delay_s=NEVER, on_drop=lambda n, why: drops.append((n, why))
    )
    with capture_logs() as logs:
        worker.submit("bad")
        worker.submit("lost with it")
        assert worker.flush(5)
        worker.submit("good")
        assert worker.flush(5)
    assert handled == ["good"]
    # a failed batch is a drop an alert sees (otelhooks.dropped), not only a log line
    assert drops == [(2, "handler_error")]
    assert [log["event"] for log in logs] == ["handle_batch failed"]
    assert logs[0]["log_level"] == "error"
    worker.shutdown()


def test_raising_on_drop_does_not_escape_submit() -> None:
    def on_drop(count: int, reason: str) -> None:
        raise RuntimeError("boom")

    worker = BoundedWorker[object]("dropraise", lambda batch: None, on_drop=on_drop)
    worker.shutdown()
    with capture_logs() as logs:
        assert worker.submit(1) is False
    assert [log["event"] for log in logs] == ["on_drop callback failed"]


def test_no_thread_starts_before_first_submit(recorder: Recorder) -> None:
    worker = BoundedWorker[object]("lazy", recorder)
    assert not worker_threads("lazy")
    worker.submit(1)
    assert len(worker_threads("lazy")) == 1
    worker.shutdown()


def test_handle_batch_runs_with_instrumentation_suppressed() -> None:
    seen: list[object] = []
    worker = BoundedWorker[object](
        "suppress", lambda batch: seen.append(get_value(_SUPPRESS_INSTRUMENTATION_KEY))
    )
    worker.submit(1)
    assert worker.flush(5)
    assert seen == [True]
    assert get_value(_SUPPRESS_INSTRUMENTATION_KEY) is None
    worker.shutdown()


def test_suppression_is_detached_between_batches() -> None:
    seen: list[object] = []

    def handle(batch: list[object]) -> None:
        # The worker thread's own context must not carry the key outside a delivery.
        seen.append(get_value(_SUPPRESS_INSTRUMENTATION_KEY))

    worker = BoundedWorker[object]("detach", handle, schedule_delay_s=NEVER)
    worker.submit(1)
    assert worker.flush(5)
    worker.submit(2)
    assert worker.flush(5)
    assert seen == [True, True]
    worker.shutdown()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_forked_child_gets_an_empty_queue_and_a_working_thread(recorder: Recorder) -> None:
    worker = BoundedWorker[object]("fork", recorder, schedule_delay_s=0.0)
    recorder.gate.clear()
    worker.submit("held-by-parent-thread")
    assert recorder.entered.wait(5)
    worker.submit("queued-in-parent")

    with warnings.catch_warnings():
        # Python 3.12+ warns about forking a process that has threads; that is the point here.
        warnings.simplefilter("ignore", DeprecationWarning)
        pid = os.fork()
    if pid == 0:
        code = 1
        try:
            recorder.gate.set()
            empty = worker.queued == 0
            worker.submit("child")
            flushed = worker.flush(5)
            code = 0 if (empty and flushed and recorder.items == ["child"]) else 2
        finally:
            os._exit(code)

    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    recorder.gate.set()
    assert worker.flush(5)
    assert recorder.items == ["held-by-parent-thread", "queued-in-parent"]
    worker.shutdown()


@pytest.mark.parametrize(
    ("queue", "batch", "delay"),
    [(0, 1, 0.1), (10, 0, 0.1), (10, 11, 0.1), (10, 5, -1.0)],
)
def test_constructor_rejects_invalid_sizes(queue: int, batch: int, delay: float) -> None:
    with pytest.raises(ValueError, match="must"):
        BoundedWorker[object](
            "bad",
            lambda items: None,
            max_queue_size=queue,
            max_batch_size=batch,
            schedule_delay_s=delay,
        )
