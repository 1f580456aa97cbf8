'use strict';
// Shared by the pages. Every value that comes from a span or an approval is put on the page with
// textContent, never parsed as HTML: tool arguments and span names are attacker-controlled.
const oh = (() => {
  const state = { session: null, version: -1, approvals: -1 };

  // Characters that reorder or hide text without being seen (bidi controls, zero-width and other
  // format characters, line separators, control characters but tab and newline, lone surrogates,
  // drawn as one replacement character whatever they are): an argument can make `;rm -rf ~` read
  // as a comment. They are shown as \uXXXX, each UTF-16 unit: inside a JSON string that is the
  // character's own escape, so the text still parses to the same value.
  const HIDDEN = /[\p{Cf}\p{Zl}\p{Zp}\p{Cs}\0-\x08\x0b-\x1f\x7f-\x9f]/gu;
  function escapeUnits(c) {
    let out = '';
    for (let i = 0; i < c.length; i++) out += `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`;
    return out;
  }
  function visible(text) {
    return String(text).replace(HIDDEN, escapeUnits);
  }

  function el(tag, cls, text) {
    const node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = visible(text);
    return node;
  }

  // How long a request waits for serve's whole answer: a fetch has none of its own, and one that
  // never answered (a proxy holding the connection, a hung serve) stopped the live view and the
  // inbox's looks for good with nothing on the page saying so. The long-poll asks serve to wait
  // up to POLL_S and gets POLL_GRACE_S more: a silent proxy is said within 35 s.
  const DEADLINE_S = 20;
  const POLL_S = 25;
  const POLL_GRACE_S = 10;
  // An answer serve did not give in time: a failure like any other, but one where what was
  // sent may have been taken (an approval's answer says so instead of "not answered").
  class NoAnswer extends Error {}

  async function api(path, options, deadlineS = DEADLINE_S) {
    const opts = Object.assign({ credentials: 'same-origin' }, options || {});
    opts.headers = Object.assign({ accept: 'application/json' }, opts.headers || {});
    if (opts.method && opts.method !== 'GET' && state.session) {
      opts.headers['x-csrf-token'] = state.session.csrf;
      opts.headers['content-type'] = 'application/json';
    }
    // a timer of the page's own (not AbortSignal.timeout): its clock is the one the page's
    // other timers run on
    const abort = new AbortController();
    const timer = setTimeout(() => abort.abort(), deadlineS * 1000);
    opts.signal = abort.signal;
    try {
      const response = await fetch(path, opts);
      if (response.status === 401) {
        location.assign('/login');
        throw new Error('not logged in');
      }
      const body = await response.json().catch(() => ({}));
      // an answer cut at the deadline is no answer: read as {}, it was shown as an empty one
      abort.signal.throwIfAborted();
      if (!response.ok) throw new Error(body.message || body.error || String(response.status));
      return body;
    } catch (err) {
      if (abort.signal.aborted) throw new NoAnswer(`serve did not answer in ${deadlineS} s`);
      throw err;
    } finally {
      clearTimeout(timer);
    }
  }

  // One thing a page shows from serve (the runs list, the open trace, the inbox's list): each
  // request for it supersedes those asked before, and only the newest one's answer is shown
  // (`show(body)`), one that arrives after a later request was asked never is. Answers come
  // back in any order (a slow filter, a long trace, a proxy), and an older list shown last
  // re-showed a card already answered, or hid a call just held until something else changed.
  // Every request resolves with the newest one's outcome, what its show returned or its
  // failure: a caller whose request was superseded (the live view's, by an answer's look) learns
  // whether what it asked for was shown. Told "done" while the newer one failed, the live view
  // counted a change as seen that no list had shown, and a call held meanwhile waited unseen.
  function latest() {
    let newest = null;
    let waiting = []; // the callers of the requests asked since the newest one settled
    return (path, show) => {
      const mine = {};
      newest = mine;
      const told = new Promise((resolve, reject) => waiting.push({ resolve, reject }));
      (async () => {
        let outcome;
        try {
          const body = await api(path);
          if (newest !== mine) return; // the newer one tells every caller
          outcome = { shown: await show(body) };
        } catch (err) {
          outcome = { err };
        }
        if (newest !== mine) return;
        const callers = waiting;
        waiting = [];
        for (const c of callers) if ('err' in outcome) c.reject(outcome.err); else c.resolve(outcome.shown);
      })();
      return told;
    };
  }

  function duration(us) {
    if (us < 1000) return `${us} µs`;
    if (us < 1e6) return `${(us / 1000).toFixed(1)} ms`;
    if (us < 6e7) return `${(us / 1e6).toFixed(2)} s`;
    return `${Math.floor(us / 6e7)} min ${Math.round((us % 6e7) / 1e6)} s`;
  }

  function when(us) {
    const d = new Date(us / 1000);
    const time = d.toLocaleTimeString(undefined, { hour12: false });
    if (d.toDateString() === new Date().toDateString()) return time;
    return `${d.toLocaleDateString()} ${time}`;
  }

  // Said at the top of the page, in place of what could not be read: an inbox that cannot read
  // serve must not look like one with nothing waiting while a call waits for its default.
  // problem(null) takes it away once the page reads serve again. One line whatever it says:
  // only its showing and its going move what is below it, and each tells onShift's listeners
  // (the inbox answers no click aimed at a card that just moved).
  const shifted = [];
  function onShift(listener) {
    shifted.push(listener);
  }
  function problem(text) {
    let node = document.getElementById('page-error');
    if (text === null) {
      if (!node) return;
      node.remove();
      for (const listener of shifted) listener();
      return;
    }
    const shown = !node;
    if (!node) {
      node = el('p', 'error page-error');
      node.id = 'page-error';
      node.setAttribute('role', 'alert');
      document.querySelector('main').prepend(node);
    }
    node.textContent = visible(text);
    node.title = node.textContent;
    if (shown) for (const listener of shifted) listener();
  }

  const pause = () => new Promise((r) => setTimeout(r, 2000));

  async function start(onChange) {
    // asked again until serve answers: a first read that failed (serve restarting, a request
    // that never answered) left the page without its live view for good
    for (;;) {
      try {
        state.session = await api('/v1/ui/session');
        break;
      } catch (err) {
        if (err.message === 'not logged in') throw err;
        problem(`This page cannot read serve: ${err.message}; trying again`);
        await pause();
      }
    }
    problem(null);
    document.getElementById('logout').addEventListener('click', async () => {
      await api('/logout', { method: 'POST', body: '{}' }).catch(() => null);
      location.assign('/login');
    });
    live(onChange);
    return state.session;
  }

  const approvalsList = latest();
  // The inbox's list, and the count of held calls on every page's menu: `show(body)` draws the
  // rest of the list (the inbox). Gives what the newest look showed, or its failure (oh.latest).
  // Without the cards' arguments: read at every change of the inbox, 255 cards of 256 KiB made
  // 128 MiB of it (the inbox reads each card's arguments once, as it draws the card).
  function pendingCount(show) {
    return approvalsList('/v1/approvals?args=0', (body) => {
      const node = document.getElementById('pending-count');
      node.textContent = body.pending.length ? String(body.pending.length) : '';
      return show ? show(body) : body;
    });
  }

  // Long-poll: returns as soon as spans or approvals changed (or every 25 s).
  async function live(onChange) {
    const badge = document.getElementById('live');
    let cut = false; // said that serve cannot be reached
    for (;;) {
      let now;
      try {
        const changes = `/v1/ui/changes?since=${state.version}&approvals=${state.approvals}&timeout=${POLL_S}`;
        now = await api(changes, undefined, POLL_S + POLL_GRACE_S);
      } catch (err) {
        badge.textContent = 'reconnecting…';
        badge.className = 'live off';
        // said where it is read: the page shows what it last read (cards that may no longer
        // wait, none of a call held since), which a small badge did not say
        problem(`serve cannot be reached (${err.message}): this page shows what it last read; trying again`);
        cut = true;
        await pause();
        continue;
      }
      if (cut) problem(null);
      cut = false;
      badge.textContent = 'live';
      badge.className = 'live on';
      try {
        const spans = now.version !== state.version;
        const approvals = now.approvals !== state.approvals;
        // kept as seen only once the page showed it: a refresh that failed (a list that did not
        // load, or the look asked after this one that took its place; serve restarting) is
        // asked again at the next look, not waited for until something else changes while a
        // held call waits unseen
        if (spans || approvals) await onChange({ spans, approvals });
        state.version = now.version;
        state.approvals = now.approvals;
      } catch (err) {
        badge.textContent = 'reconnecting…';
        badge.className = 'live off';
        await pause();
      }
    }
  }

  return { el, visible, api, NoAnswer, latest, duration, when, start, pendingCount, problem, onShift, state };
})();
