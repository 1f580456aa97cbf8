"""Spans of what an agent did that used to be lost with nothing counted or said.

Each test runs the real pipeline of ``configure()`` in a process of its own, exporting over
OTLP/HTTP to a real receiver on 127.0.0.1 or to a real traces file, and looks at what arrived.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from otelhooks import read_otlp_json_lines
from tests._realparts import OtlpHttpSink

_CHILDREN = 2

# configure(), then child processes of multiprocessing, each running one agent operation and
# ending as multiprocessing ends them (os._exit), then the parent's own operation.
_FORKING_SCRIPT = """
import multiprocessing, sys
import otelhooks

oh = otelhooks.configure(set_global=False, structured_logging=False, **{configure})

def child(n):
    with oh.operation(f"child{{n}}"):
        pass

if __name__ == "__main__":
    context = multiprocessing.get_context(sys.argv[1])
    children = [context.Process(target=child, args=(n,)) for n in range({children})]
    for process in children:
        process.start()
    for process in children:
        process.join()
        assert process.exitcode == 0, process.exitcode
    with oh.operation("parent"):
        pass
    print(oh.shutdown())
"""


@pytest.fixture
def sink() -> Iterator[OtlpHttpSink]:
    receiver = OtlpHttpSink()
    try:
        yield receiver
    finally:
        receiver.stop()


def _run(script: str, tmp_path: Path, method: str, env: dict[str, str]) -> None:
    path = tmp_path / "agent.py"
    path.write_text(script)
    result = subprocess.run(
        [sys.executable, str(path), method],
        env={**os.environ, **env},
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("method", ["fork", "forkserver"])
def test_the_spans_of_a_multiprocessing_child_are_exported(
    sink: OtlpHttpSink, tmp_path: Path, method: str
) -> None:
    script = _FORKING_SCRIPT.format(configure="{'otlp': True}", children=_CHILDREN)
    _run(script, tmp_path, method, {"OTEL_EXPORTER_OTLP_ENDPOINT": sink.endpoint})
    # Before, the children ended with their spans still queued: only the parent's arrived.
    assert sink.wait_for_count(_CHILDREN + 1, timeout=10), sink.span_names
    assert sorted(sink.span_names) == sorted(
        [*(f"invoke_agent child{n}" for n in range(_CHILDREN)), "invoke_agent parent"]
    )


def test_a_traces_file_keeps_the_lines_of_forked_children(tmp_path: Path) -> None:
    # Only fork: a forkserver or spawn child runs configure() again, a run of its own that
    # empties the file as any run does (span_exporters=[OtlpJsonLinesSpanExporter(path)] adds).
    (tmp_path / "traces.jsonl").write_text("a line of an earlier run\n")
    script = _FORKING_SCRIPT.format(configure="{'traces_out': 'traces.jsonl'}", children=_CHILDREN)
    _run(script, tmp_path, "fork", {})
    # Before, the parent emptied the file at its first export, after the children had written
    # theirs (and with fork each child emptied it too, each reporting its span exported).
    names = [span["name"] for span in read_otlp_json_lines(tmp_path / "traces.jsonl")]
    assert sorted(names) == sorted(
        [*(f"invoke_agent child{n}" for n in range(_CHILDREN)), "invoke_agent parent"]
    )
