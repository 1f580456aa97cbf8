"""The spans of recordings in file order, each once its ancestry is known, in one read.

A span inherits facts (agent, operation, session, user) from ancestors that are usually written
after it: a parent ends, and is exported, after its children. Each span is added to the
:class:`~otelhooks.replay.SpanContext` as it is read and held back until
:meth:`~otelhooks.replay.SpanContext.complete` says its ancestors are all known; it and every
span held behind it are then given out in order. What the facts then are is what reading the
whole ancestry first would have given (a span id added twice keeps its first facts).

The spans held back are bounded: past :data:`HELD_BACK` (an agent run longer than that before
its root span, or spans whose root was never recorded), the ancestry of every span of the
recordings is read first, as a second read, and the rest is given out as it is read.

A span read again (the same trace id and span id: an exporter that retried a batch after a
timeout wrote it twice, or two recordings given both hold it) is given out once and counted in
``duplicates``; a span without a span id is always given out. Telling it holds nothing more
than the ancestry already does: the context keeps one entry per span id for as long as the
replay runs (a span's parent may come at any point of the recordings), and that entry says
whether the span was given out (a flag on its node; a span that stands for its parent's node
was given out when it was added). After a first read of the ancestry (past
:data:`HELD_BACK`), each span read there has a node of its own, which costs that mode a node
per span that had none.
"""

from __future__ import annotations

import os
from collections import deque
from collections.abc import Iterator, Sequence
from typing import Any

from otelhooks.replay._context import SpanContext
from otelhooks.replay._read import check_recording, iter_ancestry, iter_spans

__all__ = ["HELD_BACK", "Spans"]

# Spans held back at most, waiting for an ancestor (a few KiB each, decoded).
HELD_BACK = 4_096


class Spans:
    """The spans of ``recordings`` for :func:`~otelhooks.replay.recorded_events` with
    ``context``: each given out once its ancestry is known (see the module docstring).

    ``read`` counts the spans given out; ``duplicates`` the spans read again and skipped (the
    same trace id and span id as one given out before); ``problems`` gets what could not be
    read, as :func:`~otelhooks.replay.iter_spans` describes it.
    """

    def __init__(
        self,
        recordings: Sequence[str | os.PathLike[str]],
        context: SpanContext,
        problems: list[str],
        held_back: int | None = None,
    ) -> None:
        self.recordings = recordings
        self.context = context
        self.problems = problems
        self.held_back = HELD_BACK if held_back is None else held_back
        self.read = 0
        self.duplicates = 0
        # True once the ancestry of every span was read first (past ``held_back``).
        self.ancestry_read = False

    def __iter__(self) -> Iterator[dict[str, Any]]:
        for path in self.recordings:  # refused before any span is given out, as when read twice
            check_recording(path)
        context = self.context
        # the spans held back, each with its (trace id, span id)
        held: deque[tuple[tuple[str, str], dict[str, Any]]] = deque()
        waiting: tuple[str, str] | None = None  # the ancestor the first span held waits for
        for path in self.recordings:
            for span in iter_spans(path, problems=self.problems):
                key, new = context._add(span)
                # the same span again (module docstring): counted once; spans without an id
                # cannot be told apart, and none is taken for another's copy
                if not new and key[1]:
                    self.duplicates += 1
                    continue
                self.read += 1
                if self.ancestry_read:
                    yield span
                    continue
                if not held:
                    waiting = context._waiting_for_key(key)
                    if waiting is None:
                        yield span  # the common case: nothing waits, nothing is missing
                        continue
                    held.append((key, span))
                    continue
                held.append((key, span))
                if waiting == key:
                    # What the first span waited for came: give out what is complete now.
                    while held:
                        waiting = context._waiting_for_key(held[0][0])
                        if waiting is not None:
                            break
                        yield held.popleft()[1]
                if len(held) > self.held_back:
                    self._read_ancestry()
                    while held:
                        yield held.popleft()[1]
        for _, span in held:  # what is still missing was never recorded
            yield span

    def _read_ancestry(self) -> None:
        for path in self.recordings:
            # Problems are reported by the spans' own read, when it gets there.
            for span in iter_ancestry(path, self.context.wanted, problems=[]):
                self.context._add(span, ancestry_only=True)
        self.ancestry_read = True
