"""Every ``Example:`` of a docstring in the package runs, as written, and shows what it says.

The examples are what a reader copies first: each runs here with doctest (``ELLIPSIS`` and
``NORMALIZE_WHITESPACE``), in a fresh folder of its own that holds the repository's
``examples/`` (the paths the examples name), with the process's OpenTelemetry settings unset.
Traffic stays on 127.0.0.1: an example that needs a server starts one. Only the examples of
what serves until it is interrupted (:data:`SKETCHES`) mark lines ``+SKIP``.
"""

from __future__ import annotations

import doctest
import importlib
import pkgutil
from pathlib import Path

import pytest
import structlog

import otelhooks
from otelhooks._actions._approval_inbox import process_inbox

ROOT = Path(__file__).resolve().parents[1]
_FLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _examples() -> list[doctest.DocTest]:
    found: list[doctest.DocTest] = []
    finder = doctest.DocTestFinder()
    for info in pkgutil.walk_packages(otelhooks.__path__, "otelhooks."):
        if info.name.endswith("__main__"):
            continue  # running the CLI is what importing it does
        module = importlib.import_module(info.name)
        found += [t for t in finder.find(module, info.name) if t.examples]
    return sorted(found, key=lambda t: t.name)


EXAMPLES = _examples()
# these run a gateway in front of a real MCP server until interrupted: tests/mcp runs them
SKETCHES = frozenset(
    {
        "otelhooks.mcp._http.McpHttpProxy",
        "otelhooks.mcp._http.run_http",
        "otelhooks.mcp._stdio.run_stdio",
    }
)


def test_the_package_has_examples() -> None:
    assert len(EXAMPLES) > 100


def test_only_the_sketches_skip_lines() -> None:
    skipping = {t.name for t in EXAMPLES if any(e.options.get(doctest.SKIP) for e in t.examples)}
    assert skipping == SKETCHES


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda t: t.name)
def test_the_example_runs(
    example: doctest.DocTest, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "examples").symlink_to(ROOT / "examples")
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_TRACES_EXPORTER", "OTEL_SDK_DISABLED"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    lines: list[str] = []
    runner = doctest.DocTestRunner(optionflags=_FLAGS)
    logging = structlog.get_config()  # configure() sets structlog up for the process
    try:
        result = runner.run(example, out=lines.append, clear_globs=True)
    finally:
        structlog.configure(**logging)
    assert result.failed == 0, "".join(lines)
    # an example leaves the process as it found it: nothing listening to its approval inbox
    assert not process_inbox().served, "the example left a listener on the process inbox"
