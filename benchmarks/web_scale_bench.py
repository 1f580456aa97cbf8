"""The web view and the inbox at the sizes teams reach, where a person waits (branch r-web4).

``python benchmarks/web_scale_bench.py trace --spans 49948``: one run of ``--spans`` spans
(``tests/web/_otlp.py``'s ``big_trace``), posted as OTLP/JSON to an in-process ``serve``; then
serve's outline (bytes, seconds and this process's CPU seconds for it), the click on the run to
its first rows drawn in Debian's Chromium, the longest task meanwhile (``longtask``), the tab's
JS heap (CDP ``Performance.getMetrics``), and one more span posted to the open run: the time to
its row drawn, the bytes the page read for it, the longest task and the tab's main thread
busy for it (CDP ``TaskDuration``); then the same of a step of 50 calls posted as a live
agent sends it (the calls before their step, six posts). serve keeps 50,000
spans of a trace (the rest are counted, not kept): 49,948 leaves room for the 52 more.

``... ops --runs 10000``: ``--runs`` runs of one span each; the list's first rows, what the page
reads, and what it reads again when one more run arrives.

``... inbox --cards 255 --kib 256``: ``--cards`` pending cards whose arguments are ``--kib`` KiB
each (content capture on): serve's listing (bytes, seconds), the inbox's cards drawn, the longest
task, the heap, and one more card asked: the bytes the page read for it and the time it took.

Run by hand (minutes at these sizes); the figures go to benchmarks/README.md.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from tests.web._otlp import big_trace, ids, post, span
from tests.web.conftest import AUTH, TOKEN, chromium, log_in

WAIT_MS = 300_000  # what a person would not wait for: said as a timeout
LONGEST = (
    "() => { window.longest = 0; new PerformanceObserver((list) => { for (const e of"
    " list.getEntries()) window.longest = Math.max(window.longest, e.duration); })"
    ".observe({ type: 'longtask' }); }"
)


def _heap(page: Any) -> float:
    cdp = page.context.new_cdp_session(page)
    cdp.send("Performance.enable")
    metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    return float(metrics["JSHeapUsedSize"]) / 2**20


# waits for the title to say `n` spans without polling the page (Playwright's waits poll it:
# tasks counted in the tab's busy time)
SPANS_SAID = """(n) => new Promise((done) => {
  const meta = document.getElementById('trace-meta');
  const said = () => meta.textContent.startsWith(`${n} spans`);
  if (said()) return done();
  new MutationObserver((_, watch) => { if (said()) { watch.disconnect(); done(); } })
    .observe(meta, { childList: true, characterData: true, subtree: true });
})"""


def _busy_ms(cdp: Any) -> float:
    """The tab's main thread time in tasks since ``cdp`` enabled ``Performance`` (CDP
    ``TaskDuration``: script, style, layout; ``ScriptDuration`` read 0 for these updates here),
    in ms. A long task is one over 50 ms: updates of 40 ms are none, however many come."""
    metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    return float(metrics["TaskDuration"]) * 1000


def _reads(page: Any) -> list[tuple[str, int]]:
    """Every response the page reads from now on: (path, body bytes)."""
    seen: list[tuple[str, int]] = []

    def on(response: Any) -> None:
        if "/v1/" in response.url and "/v1/ui/changes" not in response.url:
            with contextlib.suppress(Exception):  # a page closed meanwhile
                seen.append((response.url.split("/", 3)[3][:60], len(response.body())))

    page.on("response", on)
    return seen


def _timed_get(client: httpx.Client, path: str) -> tuple[int, float, float]:
    cpu, wall = time.process_time(), time.monotonic()
    body = client.get(path).content
    return len(body), time.monotonic() - wall, time.process_time() - cpu


def _post_all(client: httpx.Client, spans: list[dict[str, Any]]) -> None:
    for at in range(0, len(spans), 5000):
        post(client, spans[at : at + 5000])


def bench_trace(browser: Any, url: str, client: httpx.Client, count: int) -> None:
    spans = big_trace(count)
    trace_id = spans[0]["traceId"]
    _post_all(client, spans)
    kept = client.get(f"/v1/ui/traces/{trace_id}?view=outline").json()
    size, wall, cpu = _timed_get(client, f"/v1/ui/traces/{trace_id}?view=outline")
    print(f"outline: {size / 2**20:.1f} MiB, {wall:.2f} s, {cpu:.2f} s CPU (serve + client)")
    page = log_in(browser, url)
    try:
        row = page.locator("#ops-body tr.op", has_text="big-bot")
        row.wait_for(timeout=30_000)
        page.evaluate(LONGEST)
        started = time.monotonic()
        row.click()
        n = len(kept["spans"])
        page.locator("#trace-meta", has_text=f"{n} spans").wait_for(timeout=WAIT_MS)
        page.locator(".wf-row").nth(10).wait_for()
        painted = time.monotonic() - started
        longest = page.evaluate("window.longest")
        print(
            f"first rows {painted:.2f} s, longest task {longest:.0f} ms, heap {_heap(page):.0f} MiB"
        )
        reads = _reads(page)
        page.evaluate("window.longest = 0")
        cdp = page.context.new_cdp_session(page)
        cdp.send("Performance.enable")
        busy = _busy_ms(cdp)
        started = time.monotonic()
        post(client, [span(trace_id, ids()[1], "execute_tool late-one", parent=spans[0]["spanId"])])
        page.evaluate(SPANS_SAID, n + 1)
        shown = time.monotonic() - started
        read = sum(b for _, b in reads)
        longest = page.evaluate("window.longest")
        print(
            f"one span more: shown in {shown:.2f} s, page read {read / 2**20:.2f} MiB"
            f" ({len(reads)} responses), longest task {longest:.0f} ms,"
            f" busy {_busy_ms(cdp) - busy:.0f} ms"
        )
        _live_step(page, cdp, client, trace_id, spans[0]["spanId"], n + 1)
    finally:
        page.context.close()


def _live_step(
    page: Any, cdp: Any, client: httpx.Client, trace_id: str, root: str, held: int
) -> None:
    """A step of 50 calls posted as a live agent sends it (a span is sent when it ends: the
    calls first, 10 to a post, then their step): the time to the step drawn and the longest
    task meanwhile."""
    _, step = ids()
    calls = [span(trace_id, ids()[1], f"execute_tool live-{n}", parent=step) for n in range(50)]
    page.evaluate("window.longest = 0")
    busy = _busy_ms(cdp)
    started = time.monotonic()
    for at in range(0, 50, 10):
        post(client, calls[at : at + 10])
    post(client, [span(trace_id, step, "step live", parent=root)])
    page.evaluate(SPANS_SAID, held + 51)
    print(
        f"a live step (6 posts, 51 spans): shown in {time.monotonic() - started:.2f} s,"
        f" longest task {page.evaluate('window.longest'):.0f} ms,"
        f" busy {_busy_ms(cdp) - busy:.0f} ms"
    )


def bench_ops(browser: Any, url: str, client: httpx.Client, runs: int) -> None:
    agents = [f"agent-{i % 40}" for i in range(runs)]
    spans = []
    for agent in agents:
        trace_id, root = ids()
        attrs = {"gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent}
        spans.append(span(trace_id, root, f"invoke_agent {agent}", attributes=attrs))
    _post_all(client, spans)
    size, wall, cpu = _timed_get(client, "/v1/ui/operations")
    print(f"operations (first page): {size / 1024:.0f} KiB, {wall:.3f} s, {cpu:.3f} s CPU")
    page = log_in(browser, url)
    try:
        reads = _reads(page)
        page.evaluate(LONGEST)
        started = time.monotonic()
        page.reload()
        page.locator("#ops-count", has_text=f"of {runs} runs").wait_for(timeout=WAIT_MS)
        print(
            f"first rows {time.monotonic() - started:.2f} s, rows {page.locator('tr.op').count()}"
        )
        reads.clear()
        page.evaluate("window.longest = 0")
        started = time.monotonic()
        trace_id, root = ids()
        post(client, [span(trace_id, root, "invoke_agent late-one")])
        # the index keeps 10,000 runs: the oldest goes as this one comes
        page.locator(f"#ops-body tr.op[data-trace='{trace_id}']").wait_for(timeout=WAIT_MS)
        print(
            f"one run more: shown in {time.monotonic() - started:.2f} s, page read"
            f" {sum(b for _, b in reads) / 1024:.0f} KiB ({len(reads)} responses),"
            f" longest task {page.evaluate('window.longest'):.0f} ms"
        )
    finally:
        page.context.close()


def bench_inbox(browser: Any, url: str, client: httpx.Client, cards: int, kib: int) -> None:
    for n in range(cards):
        body = {"hook_id": "ask", "tool": "Write", "timeout_s": 3600, "default": "deny"}
        body["args"] = {"path": f"f{n}.txt", "content": "x" * (kib * 1024 - 512)}
        created = client.post("/v1/approvals", json=body)
        assert created.status_code == 201, created.text
    size, wall, cpu = _timed_get(client, "/v1/approvals")
    print(f"listing: {size / 2**20:.1f} MiB, {wall:.2f} s, {cpu:.2f} s CPU (serve + client)")
    page = log_in(browser, url)
    try:
        page.evaluate(LONGEST)
        started = time.monotonic()
        page.goto(f"{url}/approvals")
        page.evaluate(LONGEST)
        page.locator("article.approval-card").nth(cards - 1).wait_for(timeout=WAIT_MS)
        drawn = time.monotonic() - started
        print(
            f"cards drawn {drawn:.2f} s, longest task {page.evaluate('window.longest'):.0f} ms,"
            f" heap {_heap(page):.0f} MiB"
        )
        reads = _reads(page)
        page.evaluate("window.longest = 0")
        started = time.monotonic()
        body = {"hook_id": "ask", "tool": "Write", "timeout_s": 3600, "default": "deny"}
        body["args"] = {"path": "late.txt", "content": "y" * (kib * 1024 - 512)}
        assert client.post("/v1/approvals", json=body).status_code == 201
        page.locator("article.approval-card").nth(cards).wait_for(timeout=WAIT_MS)
        print(
            f"one card more: drawn in {time.monotonic() - started:.2f} s, page read"
            f" {sum(b for _, b in reads) / 2**20:.2f} MiB ({len(reads)} responses),"
            f" longest task {page.evaluate('window.longest'):.0f} ms"
        )
    finally:
        page.context.close()
        for item in client.get("/v1/approvals").json()["pending"]:
            client.post(f"/v1/approvals/{item['id']}", json={"decision": "deny"})


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("what", choices=["trace", "ops", "inbox"])
    parser.add_argument("--spans", type=int, default=50_000)
    parser.add_argument("--runs", type=int, default=10_000)
    parser.add_argument("--cards", type=int, default=255)
    parser.add_argument("--kib", type=int, default=256)
    args = parser.parse_args()
    os.environ["OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"] = "true"
    from otelhooks import serve

    print(f"load average {os.getloadavg()[0]:.2f}")
    # the cards' asker (this script) does not look at them as a waiting asker does: a lease
    # longer than the run keeps them pending
    server = serve(token=TOKEN, approval_lease_s=3600)
    try:
        with (
            httpx.Client(base_url=server.url, headers=AUTH, timeout=600) as client,
            chromium() as browser,
        ):
            if args.what == "trace":
                bench_trace(browser, server.url, client, args.spans)
            elif args.what == "ops":
                bench_ops(browser, server.url, client, args.runs)
            else:
                bench_inbox(browser, server.url, client, args.cards, args.kib)
    finally:
        server.stop()
    print(f"load average {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
