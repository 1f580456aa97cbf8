'use strict';
// The runs page: the operations list (paged by the server) and one trace as a waterfall whose
// rows are rendered only where the viewport is (a 10,000-span trace stays fast).
(() => {
  const { el, visible, api, duration, when } = oh;
  const ROW = 24;
  const MAX_INDENT = 12;
  const collapsed = new Set(); // the ids of the spans whose children the person hid
  const page = { next: null, open: null, trace: null, tree: ohTree.make(collapsed), selected: null };
  const $ = (id) => document.getElementById(id);

  function filters() {
    const q = new URLSearchParams();
    if ($('f-agent').value) q.set('agent', $('f-agent').value);
    if ($('f-tool').value) q.set('tool', $('f-tool').value);
    if ($('f-decision').value) q.set('decision', $('f-decision').value);
    if ($('f-errors').checked) q.set('errors', '1');
    return q;
  }

  function fillSelect(select, values) {
    const keep = select.value;
    while (select.options.length > 1) select.remove(1);
    for (const v of values) select.add(new Option(visible(v), v));
    select.value = values.includes(keep) ? keep : '';
    if (keep && !values.includes(keep)) { select.add(new Option(visible(keep), keep)); select.value = keep; }
  }

  function opRow(op) {
    const tr = el('tr', 'op');
    tr.dataset.trace = op.trace_id;
    if (op.trace_id === page.open) tr.classList.add('selected');
    const agent = el('td', 'agent');
    const name = el('span', 'agent-name', op.agent || op.root);
    name.title = name.textContent;
    agent.append(name);
    tr.append(
      el('td', 'nowrap', when(op.start_us)),
      agent,
      el('td', 'num', duration(op.duration_us)),
      el('td', 'num', op.tool_calls),
      el('td', op.errors ? 'num bad' : 'num', op.errors),
      el('td', op.denials ? 'num bad' : 'num', op.denials),
      el('td', 'num', op.tokens_in || op.tokens_out ? `${op.tokens_in}/${op.tokens_out}` : ''),
      el('td', 'num', op.cost === null ? '' : `$${op.cost.toFixed(op.cost >= 1 ? 2 : 6)}`),
    );
    for (const d of op.decisions) agent.append(el('span', `dec ${d}`, d));
    agent.append(el('div', 'svc muted', op.service));
    tr.addEventListener('click', () => openTrace(op.trace_id));
    return tr;
  }

  // A list asked for earlier (other filters, a refresh) that answers after a later one is
  // stale (oh.latest): never shown, and the list shown stays the one asked for last. Gives the
  // list shown by the newest request (or its failure), whichever asked.
  const opsList = oh.latest();
  const PAGE = 100; // runs a page of the list holds (serve's default); serve gives 1,000 at most
  function loadOps(more, again) {
    const q = filters();
    if (more && page.next) q.set('before', page.next);
    // the list read again (the live view) keeps as many runs as it shows: before, every change
    // took a list the person had paged through back to its first 100, under their eyes
    const shown = $('ops-body').children.length;
    if (again && shown > PAGE) q.set('limit', String(Math.min(shown, 1000)));
    // the next page of the list shown is no next page of the one asked for now: clicked
    // meanwhile, it asked past the old list's last run and its runs were added below it
    if (!more) { page.next = null; $('ops-more').hidden = true; }
    return opsList(`/v1/ui/operations?${q}`, (body) => showList(body, more));
  }

  function showList(body, more) {
    oh.problem(null);
    fillSelect($('f-agent'), body.agents);
    fillSelect($('f-tool'), body.tools);
    const tbody = $('ops-body');
    if (!more) tbody.replaceChildren();
    for (const op of body.operations) tbody.append(opRow(op));
    page.next = body.next_before;
    $('ops-more').hidden = !page.next;
    $('ops-empty').hidden = body.total > 0;
    $('ops-count').textContent = `${body.matched} of ${body.total} runs`;
    return body;
  }

  // A list the person asked for that could not be read says so above the list shown, which is
  // the list of other filters; before, nothing did, and the old runs stood under the new filter.
  function showOps(more) {
    return loadOps(more).catch((err) => oh.problem(`The runs could not be read: ${err.message}`));
  }

  // -- the trace ---------------------------------------------------------------------------

  const KINDS = { chat: 'model', execute_tool: 'tool', invoke_agent: 'agent', step: 'step',
    compress_context: 'compaction', call_agent: 'subagent', request_human_approve: 'approval',
    send_message: 'message', agent_lifecycle: 'lifecycle' };
  // The kind shown: the span's own operation name when it is none of ours (a sender's text).
  function kindOf(span) {
    const op = span.o || '';
    return KINDS[op] || (op ? op : 'span');
  }
  // The kind a row's classes name: ours only. A sender's operation name `x err` made the bar red
  // as an error's, `x selected` the row the selected one: class names split at spaces.
  function kindClass(span) {
    return `k-${KINDS[span.o] || 'span'}`;
  }

  function renderRows() {
    const box = $('wf');
    const inner = $('wf-inner');
    const rows = page.tree.rows;
    inner.style.height = `${rows.length * ROW}px`;
    const first = Math.max(0, Math.floor(box.scrollTop / ROW) - 10);
    const last = Math.min(rows.length, first + Math.ceil(box.clientHeight / ROW) + 20);
    const t0 = page.trace.start;
    const span = Math.max(1, page.trace.end - t0);
    const nodes = [];
    for (let i = first; i < last; i++) {
      const { span: s, depth, kids } = rows[i];
      const row = el('div', `wf-row ${kindClass(s)}`);
      row.dataset.span = s.s;
      row.style.top = `${i * ROW}px`;
      if (s.s === page.selected) row.classList.add('selected');
      const name = el('div', 'wf-name');
      // indented at most MAX_INDENT levels, the depth said past them: a chain of 300 spans
      // pushed its last rows' names and marks out of their column
      name.style.paddingLeft = `${4 + Math.min(depth, MAX_INDENT) * 14}px`;
      const toggle = el('span', 'toggle', kids ? (collapsed.has(s.s) ? '▸' : '▾') : '');
      toggle.addEventListener('click', (ev) => {
        ev.stopPropagation();
        if (collapsed.has(s.s)) collapsed.delete(s.s); else collapsed.add(s.s);
        page.tree.toggle(s, page.trace.spans);
        renderRows();
      });
      const label = el('span', 'span-name', s.n);
      label.title = label.textContent;
      if (depth > MAX_INDENT) name.append(el('span', 'depth', `↳${depth}`));
      name.append(toggle, el('span', 'kind', kindOf(s)), label);
      if (s.d && s.d.kind) {
        const badge = el('span', `dec ${s.d.kind}`, s.d.kind);
        badge.title = visible(`${s.d.kind}${s.d.by ? ` by ${s.d.by}` : ''}${s.d.why ? `: ${s.d.why}` : ''}`);
        name.append(badge);
      }
      if (s.st === 2) name.append(el('span', 'dec error', 'error'));
      const lane = el('div', 'wf-lane');
      const bar = el('div', `wf-bar ${kindClass(s)}${s.st === 2 ? ' err' : ''}`);
      bar.style.left = `${((s.t0 - t0) / span) * 100}%`;
      bar.style.width = `${Math.max(0.2, ((s.t1 - s.t0) / span) * 100)}%`;
      lane.append(bar, el('span', 'wf-dur', duration(s.t1 - s.t0)));
      row.append(name, lane);
      row.addEventListener('click', () => select(s));
      nodes.push(row);
    }
    inner.replaceChildren(...nodes);
  }

  function kv(table, key, value) {
    const tr = el('tr');
    const text = typeof value === 'string' ? value : JSON.stringify(value);
    tr.append(el('th', null, key), el('td', null, text));
    table.append(tr);
  }

  async function select(outline) {
    page.selected = outline.s;
    renderRows();
    let s;
    try {
      // a span id sent twice: the detail of this one, the nth of that id (the first alone
      // showed another row's attributes under this one)
      const nth = page.trace.spans.filter((x) => x.s === outline.s).indexOf(outline);
      s = await api(`/v1/ui/traces/${page.open}/spans/${outline.s}${nth > 0 ? `?n=${nth}` : ''}`);
    } catch (err) {
      // said in the detail's place: the details of the row selected before stood under it
      if (page.selected !== outline.s) return;
      $('detail').hidden = false;
      $('detail').replaceChildren(el('p', 'error', `span ${outline.s} could not be read: ${err.message}`));
      return;
    }
    if (page.selected !== s.s) return; // another row was clicked meanwhile
    const box = $('detail');
    box.hidden = false;
    const head = el('h3', null, s.n);
    const meta = el('table', 'kv');
    kv(meta, 'span id', s.s);
    kv(meta, 'parent', s.p || '(root)');
    kv(meta, 'duration', duration(s.t1 - s.t0));
    kv(meta, 'status', ['unset', 'ok', 'error'][s.st] + (s.sm ? `: ${s.sm}` : ''));
    if (s.d && s.d.kind) {
      kv(meta, 'hook decision', s.d.kind);
      if (s.d.by) kv(meta, 'decided by', s.d.by);
      if (s.d.why) kv(meta, 'why', s.d.why);
    }
    const attrs = el('table', 'kv');
    for (const key of Object.keys(s.a).sort()) kv(attrs, key, s.a[key]);
    const parts = [head, meta, el('h4', null, 'Attributes'), attrs];
    if (s.e.length) {
      parts.push(el('h4', null, 'Events'));
      const events = el('table', 'kv');
      for (const e of s.e) kv(events, e.n, e.a);
      parts.push(events);
    }
    if (s.l.length) {
      parts.push(el('h4', null, 'Links'));
      const links = el('ul');
      for (const l of s.l) {
        const li = el('li');
        const a = el('a', 'trace-link', `${l.t} / ${l.s}`);
        a.href = `#trace=${l.t}`;
        a.addEventListener('click', (ev) => { ev.preventDefault(); openTrace(l.t); });
        li.append(a, el('span', 'muted', ` ${JSON.stringify(l.a)}`));
        links.append(li);
      }
      parts.push(links);
    }
    box.replaceChildren(...parts);
  }

  // The run clicked last is the one shown: a run clicked before it whose trace answers later
  // (a long trace, a refresh of the open one) is stale (oh.latest) and dropped. A trace that
  // could not be read says so in its title; the live view's refresh is failed by it too.
  // The open run read again (keepScroll: the live view) asks only for the spans after those it
  // holds: serve answers with them (`from`: how many it left out) or, when the page's are not
  // the run's start, with all (`from` 0). An open run of 50,000 spans was 7 MiB read and drawn
  // again at each span its agent added, the tab busy for seconds at a time. The new spans are
  // added to the spans held and put in the tree drawn (ohTree), not the tree built again.
  const traceView = oh.latest();
  async function loadTrace(traceId, keepScroll) {
    const held = keepScroll && page.trace && page.trace.id === traceId ? page.trace.spans : [];
    const after = held.length ? `&from=${held.length}&last=${held[held.length - 1].s}` : '';
    try {
      await traceView(`/v1/ui/traces/${traceId}?view=outline${after}`, (body) => {
        let added = null;
        if (body.from) {
          // the newest request is the one shown (oh.latest): asked from what the page holds
          if (body.from !== held.length || page.trace === null || page.trace.spans !== held) {
            throw new Error('the run changed while it was read; reading it again');
          }
          added = body.spans;
          for (const s of added) held.push(s);
          body.spans = held;
        }
        return showTrace(traceId, body, keepScroll, added);
      });
    } catch (err) {
      $('trace').hidden = false;
      $('trace-title').textContent = visible(`trace ${traceId}: ${err.message}`);
      if (traceId !== page.open) {
        // another run's spans are not this one's: they stood under its title and failure
        page.open = null;
        page.trace = null;
        page.selected = null;
        page.tree.build([]);
        $('wf-inner').replaceChildren();
        $('trace-meta').textContent = '';
        $('detail').hidden = true;
        for (const tr of document.querySelectorAll('#ops-body tr')) tr.classList.toggle('selected', tr.dataset.trace === traceId);
      }
      throw err;
    }
  }

  function openTrace(traceId) {
    return loadTrace(traceId, false).catch(() => null);
  }

  // `added`: the spans of `body` new to the run drawn (the rest the page held), or null.
  function showTrace(traceId, body, keepScroll, added) {
    const first = page.open !== traceId;
    page.open = traceId;
    if (first) { collapsed.clear(); page.selected = null; $('detail').hidden = true; }
    const grown = added && !first && page.trace;
    let start = grown ? page.trace.start : Infinity;
    let end = grown ? page.trace.end : 0;
    for (const s of grown ? added : body.spans) { if (s.t0 < start) start = s.t0; if (s.t1 > end) end = s.t1; }
    page.trace = { id: traceId, spans: body.spans, start, end, updated: body.summary.updated };
    if (grown) page.tree.add(added, body.spans); else page.tree.build(body.spans);
    $('trace').hidden = false;
    $('trace-title').textContent = visible(`${body.summary.agent || body.summary.root} · ${traceId}`);
    const dropped = body.dropped ? ` · ${body.dropped} spans not kept` : '';
    $('trace-meta').textContent = visible(`${body.spans.length} spans · ${duration(end - start)} · ${body.summary.service}${dropped}`);
    const session = oh.state.session;
    const jaeger = $('trace-jaeger');
    jaeger.hidden = !session.jaeger_url;
    if (session.jaeger_url) jaeger.href = `${session.jaeger_url}/trace/${traceId}`;
    const grafana = $('trace-grafana');
    grafana.hidden = !session.grafana_url;
    if (session.grafana_url) {
      grafana.href = `${session.grafana_url}/d/otelhooks-agent-overview?var-service=${encodeURIComponent(body.summary.service)}`;
    }
    if (first && !keepScroll) $('wf').scrollTop = 0;
    renderRows();
    for (const tr of document.querySelectorAll('#ops-body tr')) tr.classList.toggle('selected', tr.dataset.trace === traceId);
    if (location.hash !== `#trace=${traceId}`) history.replaceState(null, '', `#trace=${traceId}`);
  }

  // What changed is read again; a read that fails fails the change, which the live view then
  // asks again (oh.start): before, an open trace that could not be read again, or the count of
  // held calls, was counted as seen and stayed stale until something else changed.
  async function onChange(change) {
    await Promise.all([change.approvals ? oh.pendingCount() : null, change.spans ? refreshRuns() : null]);
  }

  async function refreshRuns() {
    // the list shown, this one's or that of one asked for since (a filter): before, the
    // open trace was not read again when a filter's list took this one's place
    const ops = await loadOps(false, true).catch((err) => {
      oh.problem(`The runs could not be read: ${err.message}`);
      throw err;
    });
    // the open trace is fetched again only when it changed (a 10,000-span trace is megabytes)
    const open = page.open && ops.operations.find((op) => op.trace_id === page.open);
    if (open && page.trace && open.updated !== page.trace.updated) await loadTrace(page.open, true);
  }

  document.addEventListener('DOMContentLoaded', async () => {
    for (const id of ['f-agent', 'f-tool', 'f-decision', 'f-errors']) $(id).addEventListener('change', () => showOps(false));
    $('ops-more').addEventListener('click', () => showOps(true));
    $('wf').addEventListener('scroll', () => { if (page.trace) requestAnimationFrame(renderRows); });
    await oh.start(onChange);
    await showOps(false);
    oh.pendingCount().catch(() => null);
    const m = /^#trace=([0-9a-f]{32})$/.exec(location.hash);
    if (m) openTrace(m[1]);
  });
})();
