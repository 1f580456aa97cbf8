"""The replay report, held byte for byte: the per-hook tallies, the JSON lines and the table of a
recording with every kind of outcome (denies, mocks, rewrites, errors, permissive hooks, webhooks
not called, events without content) are what ``data/tallies_report.txt`` holds, so a change to how
the report counts (for speed: benchmarks/README.md, "Replay, fourth pass: the report's tallies")
cannot change what it says."""

from __future__ import annotations

from pathlib import Path

from otelhooks import HooksEngine
from otelhooks.replay import ReplayReport, read_recording, recorded_events, replay, replay_events
from tests.replay.test_replay_equivalence import POLICY_PY, POLICY_YAML, _recordings

GOLDEN = Path(__file__).parent / "data" / "tallies_report.txt"


def _rendered(folder: Path) -> str:
    """Two reports of one recording with every kind of outcome, as text: the CLI's (``replay``)
    and one made with no hook ids, its ``hooks`` read every 50 events (rows made as matched)."""
    (folder / "policy.py").write_text(POLICY_PY)
    policy = folder / "policy.yaml"
    policy.write_text(POLICY_YAML)
    recordings = _recordings(folder, 6, 40, 64)
    whole = replay(recordings, [policy])
    engine = HooksEngine.from_files([policy])
    try:
        bare = ReplayReport()
        events = recorded_events([s for path in recordings for s in read_recording(path)])
        for n, outcome in enumerate(replay_events(engine, events), 1):
            bare.add(outcome)
            if n % 50 == 0:
                assert all(tally.seen for tally in bare.hooks.values())
    finally:
        engine.shutdown(1.0)
    parts: list[str] = []
    for report in (whole, bare):
        parts += [*report.json_lines(), report.table(), repr(report.hooks), repr(report.tools)]
    return "\n".join(parts).replace(str(folder), "TMP") + "\n"


def test_the_report_of_many_tools_and_outcomes_is_what_it_was_byte_for_byte(
    tmp_path: Path,
) -> None:
    assert _rendered(tmp_path) == GOLDEN.read_text()
