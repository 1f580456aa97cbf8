'use strict';
// The approvals inbox: pending calls with Approve / Deny, and the answered ones.
(() => {
  const { el, visible, api, when } = oh;
  const $ = (id) => document.getElementById(id);
  const cards = new Map(); // approval id -> {card, timer node, item}, in the page's order
  // approval id -> what this page said of its answer given after another one stood: said again
  // on the answered row, where the person reads the outcome once the card left
  const late = new Map();
  // A click on a card drawn or moved this soon was not aimed at it: a card that leaves (answered
  // elsewhere, or its time up: the oldest, on top) moves those below it up, and a page on another
  // port that turns the first click of a double-click into a visit here gets the second on a card
  // just drawn. Only the card clicked counts: a new card is drawn below the others and moves none,
  // and anyone holding the ingest token can ask for one every half second.
  const STILL_MS = 1000;
  // The cards move at most once in SETTLE_MS: a card that leaves sooner after the last move leaves
  // a blank of its height until then. An agent can time the deadlines of cards it asked for before
  // the real one (above it) to pass one every half second: each would move the real card and
  // refuse the click on it, until its own deadline gave it its default.
  const SETTLE_MS = 5000;
  let lastMove = 0;
  let settling = null;

  function card(item, content) {
    const box = el('article', 'approval-card');
    box.dataset.approval = item.id;
    const head = el('div', 'approval-head');
    head.append(el('strong', 'tool', item.tool), el('span', 'muted', ` asked by hook ${item.hook_id}`));
    const left = el('span', 'time-left');
    head.append(left);
    const meta = el('table', 'kv');
    // when serve took the card (no asker chooses it): look-alikes asked at other times differ
    const rows = [['asked', when(item.created_ms * 1000)], ['agent', item.agent],
      ['session', item.session], ['user', item.user],
      ['event', item.event], ['why', item.reason], ['if nobody answers', item.default],
      ['trace', item.trace_id]];
    for (const [k, v] of rows) {
      if (!v) continue;
      const tr = el('tr');
      tr.append(el('th', null, k), el('td', null, v));
      meta.append(tr);
    }
    box.append(head, meta);
    let edit = null;
    let text = '';
    if (content) {
      box.append(el('h4', null, 'Arguments'));
      // the arguments' own text (serve's): JSON.parse reads every number as a double, and
      // showed 9007199254740993 as 9007199254740992, which is not the call that runs
      text = visible(item.args_text ?? JSON.stringify(item.args, null, 2));
      if (item.editable) {
        edit = el('textarea', 'args');
        edit.value = text;
        edit.addEventListener('input', () => fit(edit));
        edit.setAttribute('aria-label', 'arguments (editable)');
        box.append(edit);
      } else box.append(el('pre', 'args', text));
    }
    const reason = el('input', 'reason');
    reason.type = 'text';
    reason.placeholder = 'reason (optional)';
    reason.setAttribute('aria-label', 'reason');
    const approve = el('button', 'approve', 'Approve');
    const deny = el('button', 'deny', 'Deny');
    approve.type = deny.type = 'button';
    const problem = el('p', 'error');
    problem.hidden = true;
    async function answer(decision) {
      if (Date.now() - entry.movedAt < STILL_MS) {
        problem.textContent = 'The cards had just changed: nothing was answered. Read this card, then click again.';
        problem.hidden = false;
        return;
      }
      problem.hidden = true;
      let body = JSON.stringify({ decision, reason: reason.value });
      if (edit && decision === 'allow' && edit.value !== text) {
        try {
          JSON.parse(edit.value);
        } catch (err) {
          problem.textContent = `The arguments are not valid JSON: ${err.message}`;
          problem.hidden = false;
          return;
        }
        // the box's own text, not JSON.parse's reading of it: that rounds each large integer
        body = `${body.slice(0, -1)},"args":${edit.value}}`;
      }
      approve.disabled = deny.disabled = true;
      try {
        await api(`/v1/approvals/${item.id}`, { method: 'POST', body });
      } catch (err) {
        // no reply in time: serve may have taken it, which "Not answered" would deny; the list
        // read again shows whether it stands (a second answer of a taken one gets a 409)
        problem.textContent = err instanceof oh.NoAnswer
          ? `Perhaps not answered (${err.message}): if this card stays, answer again`
          : `Not answered: ${err.message}`;
        problem.hidden = false;
        // answered elsewhere (another tab, a person, its default, its asker gone): no answer of
        // this card is offered again, and the list is read to show whose answer stands
        if (/^answered already/.test(err.message)) {
          late.set(item.id, `your ${decision} here came after this answer: not given`);
          await look().catch(() => null);
        } else {
          approve.disabled = deny.disabled = false;
          if (err instanceof oh.NoAnswer) await look().catch(() => null);
        }
        return;
      }
      // answered: a list that cannot be read again now (this look, or the one asked after it
      // whose outcome is this one's) does not make it "not answered"
      entry.answered = true;
      await look().catch(() => null);
    }
    approve.addEventListener('click', () => answer('allow'));
    deny.addEventListener('click', () => answer('deny'));
    const actions = el('div', 'actions');
    actions.append(reason, approve, deny);
    box.append(actions, problem);
    const now = Date.now();
    // answered: given here and taken by serve
    const entry = { box, left, item, edit, problem, answered: false, seenAt: now, movedAt: now };
    return entry;
  }

  // The box is as tall as what it holds: a box of a few rows showed a long first value and hid
  // the argument after it (a `query` below a page of `comment`) unless one thought to scroll.
  function fit(edit) {
    edit.style.height = 'auto';
    edit.style.height = `${edit.scrollHeight + edit.offsetHeight - edit.clientHeight}px`;
  }

  // Every card moved now (a note above them shown or gone): a click in the next STILL_MS on
  // any of them was aimed at what was there before.
  function moved() {
    const now = Date.now();
    for (const entry of cards.values()) entry.movedAt = now;
  }

  function collapse() {
    settling = null;
    lastMove = Date.now();
    let moved = false; // a card left: those below it moved up
    for (const box of [...$('pending').children]) {
      if (box.classList.contains('gone')) { box.remove(); moved = true; }
      else if (moved) cards.get(box.dataset.approval).movedAt = lastMove;
    }
  }

  function tick() {
    for (const entry of cards.values()) {
      const left = Math.max(0, entry.item.time_left_s - (Date.now() - entry.seenAt) / 1000);
      entry.left.textContent = `${Math.ceil(left)} s left, then ${entry.item.default}`;
    }
  }

  // A look asked since this one is the one drawn, and its outcome is this one's (oh.latest).
  function refresh() {
    return oh.pendingCount(draw);
  }

  // The arguments of `items`, cards not drawn yet, each read once (a pending card's never
  // change; the list comes without them): id -> the card as serve gives it alone (`args_text`,
  // and `editable` by the display rule). A card answered meanwhile is left out: the next look
  // takes it off the list.
  async function argsOf(items) {
    const read = items.map((item) => api(`/v1/approvals/${item.id}`).catch((err) => {
      if (/^not_found$/.test(err.message)) return null; // gone from serve: never drawn
      throw err;
    }));
    const got = new Map();
    for (const one of await Promise.all(read)) if (one && one.state === 'pending') got.set(one.id, one);
    return got;
  }

  // New cards are drawn a few at a time, each below those drawn (so they move none), as their
  // arguments are read: a browser reads six at once from a host, and each read waits at most
  // DEADLINE_S, queued behind hundreds it waited longer. 255 cards of 256 KiB take tens of
  // seconds to read here: the first are on the page within one.
  const BATCH = 6;
  let draws = 0; // the newest draw: one still reading arguments leaves the cards to it
  async function draw(body) {
    const mine = ++draws;
    oh.problem(null);
    $('content-note').hidden = body.capture_content;
    const live = new Set(body.pending.map((a) => a.id));
    let left = false;
    for (const [id, entry] of cards) {
      if (live.has(id)) continue;
      cards.delete(id);
      entry.box.style.height = `${entry.box.offsetHeight}px`;
      entry.box.classList.add('gone');
      entry.box.replaceChildren(el('p', 'muted', 'No longer waiting.'));
      left = true;
    }
    if (left && !settling) {
      const wait = lastMove + SETTLE_MS - Date.now();
      if (wait <= 0) collapse(); else settling = setTimeout(collapse, wait);
    }
    const fresh = [];
    for (const item of body.pending) {
      const known = cards.get(item.id);
      if (known) { known.item = item; known.seenAt = Date.now(); } else fresh.push(item);
    }
    for (let i = 0; i < fresh.length; i += BATCH) {
      const batch = fresh.slice(i, i + BATCH);
      const whole = body.capture_content ? await argsOf(batch) : null;
      if (mine !== draws) return body;
      for (const item of batch) {
        if (whole && !whole.has(item.id)) continue; // answered as its arguments were read
        const shown = whole ? { ...item, ...whole.get(item.id), time_left_s: item.time_left_s } : item;
        const entry = card(shown, body.capture_content);
        cards.set(item.id, entry);
        $('pending').append(entry.box);
        if (entry.edit) fit(entry.edit);
      }
      $('all').hidden = cards.size === 0; // shown with the first card: its showing moves none
      $('deny-all').textContent = `Deny all ${cards.size} waiting`;
      tick();
    }
    // A full inbox refuses every call (each one blocked): the asker logs it, which the person
    // does not read. Said above the cards, it moves them down once, as a card leaving does.
    const refused = body.refused;
    if (refused.count) {
      const note = $('refused');
      if (note.hidden) {
        note.hidden = false;
        moved();
      }
      note.textContent = `${refused.count} call${refused.count === 1 ? '' : 's'} refused since `
        + `${when(refused.since_ms * 1000)} (the last at ${when(refused.last_ms * 1000)}): the `
        + 'inbox was full, and each one was blocked. Deny the calls you do not expect to make room.';
      note.title = note.textContent;
    }
    $('none-pending').hidden = body.pending.length > 0;
    $('all').hidden = cards.size === 0; // shown with the first card: its showing moves none
    $('deny-all').textContent = `Deny all ${cards.size} waiting`;
    const rows = body.answered.map((a) => {
      const tr = el('tr', `answered ${a.state}`);
      tr.dataset.approval = a.id;
      tr.append(el('td', 'nowrap', when(a.answered_ms * 1000)), el('td', 'tool', a.tool),
        el('td', null, a.hook_id), el('td', `dec ${a.state === 'allowed' ? 'allowed' : 'denied'}`, a.decision),
        el('td', null, a.answered_by), el('td', null, a.answer_reason));
      if (late.has(a.id)) tr.lastChild.append(el('div', 'error', late.get(a.id)));
      return tr;
    });
    $('answered').replaceChildren(...rows);
    tick();
  }

  // Every look at the list (the live view's, an answer's, Deny all's): one that fails says so
  // above the cards, and on each card answered here, until a look succeeds.
  async function look() {
    try {
      await refresh();
    } catch (err) {
      oh.problem(`The inbox could not be read: ${err.message}`);
      for (const entry of cards.values()) {
        if (!entry.answered) continue;
        entry.problem.textContent = `Answered; the list could not be read again: ${err.message}`;
        entry.problem.hidden = false;
      }
      throw err;
    }
  }

  // An agent holding the ingest token can ask for hundreds of cards just like its real one: a
  // person denying them one by one does not reach the real one before its default applies.
  // Denying is never the dangerous answer, so this one needs no second look.
  async function denyAll() {
    const ids = [...cards.keys()];
    $('deny-all').disabled = true;
    const body = JSON.stringify({ decision: 'deny', reason: 'denied with every waiting call' });
    let failed = 0;
    let allowed = 0; // answered allow before this deny reached them (elsewhere, or by default)
    let unknown = 0; // no reply in time: serve may have taken the deny, or not
    for (let i = 0; i < ids.length; i += 16) {
      const sent = ids.slice(i, i + 16).map((id) => api(`/v1/approvals/${id}`, { method: 'POST', body }));
      for (const got of await Promise.allSettled(sent)) {
        if (got.status !== 'rejected') continue;
        if (/^answered already: allow/.test(got.reason.message)) allowed += 1;
        else if (got.reason instanceof oh.NoAnswer) unknown += 1;
        else if (!/^answered already/.test(got.reason.message)) failed += 1;
      }
    }
    // "Deny all" saying nothing reads as every call denied: one allowed meanwhile ran
    const said = [];
    if (failed) said.push(`${failed} could not be denied: deny them on their cards`);
    if (unknown) said.push(`${unknown} got no reply from serve in time: deny the cards that stay`);
    if (allowed) said.push(`${allowed} had been allowed already (see Answered): not denied`);
    if (said.length) {
      $('all-note').textContent = said.join('; ');
      $('all-note').className = 'error';
      moved(); // a longer note can take another line above the cards
    }
    $('deny-all').disabled = false;
    await look();
  }

  document.addEventListener('DOMContentLoaded', async () => {
    $('deny-all').addEventListener('click', denyAll);
    oh.onShift(moved);
    // the countdowns run whatever the first look at the list did: they stood still when it
    // failed, and a card drawn by a later look said "40 s left" until its default applied
    setInterval(tick, 1000);
    // the live view looks at the list at once and at each change, and again until a look
    // that failed succeeds
    await oh.start((change) => (change.approvals ? look() : null));
    window.addEventListener('resize', () => {
      for (const entry of cards.values()) if (entry.edit) fit(entry.edit);
    });
  });
})();
