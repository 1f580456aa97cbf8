'use strict';
// The waterfall's tree: a run's spans as rows, parents before their children, siblings by
// their start. Built once when a run opens; a span its agent adds later is put in its place (a
// child under its parent; a span whose children came first, as they do since a span is sent
// when it ends, takes them under it) instead of the tree being built again from every span: a
// 50,000-span run took the page 84-175 ms at each span added (benchmarks/README.md, r-web4).
const ohTree = (() => {
  const byStart = (a, b) => a.t0 - b.t0;
  const NONE = [];

  // Where `s` goes in `list` (sorted by start): after the spans that start when it does, where
  // a stable sort of the spans in the order they came puts the one that came last.
  function slot(list, s) {
    let lo = 0;
    let hi = list.length;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (list[mid].t0 <= s.t0) lo = mid + 1; else hi = mid;
    }
    return lo;
  }

  function indexIn(list, s) {
    let at = slot(list, s) - 1;
    while (list[at] !== s) at--;
    return at;
  }

  // A tree of spans whose rows leave out those under a span whose id `collapsed` holds.
  // `rows`: [{ span, depth, kids }], the rows shown, replaced or changed in place.
  function make(collapsed) {
    const t = {
      rows: [],
      ids: new Map(), // span id: the first span of that id
      children: new Map(), // span id: its child spans, by start
      roots: [], // spans whose parent is none, themselves or not here; by start
      waiting: new Map(), // a parent id not here: the roots that name it
      shown: new Map(), // span: its row, for the rows shown
      twice: false, // a span id sent twice
      plain: true, // no span id twice, no ring: a span added can be put in place
    };

    // Puts the rows of `root` and what is under it, from `depth0`, in `out`; gives how many
    // spans it walked (shown, or under a collapsed one). Every span is drawn whatever its
    // parents say (a sender chooses them): `seen` ({ reached, opened }, shared by the walks of
    // one tree) has a span id sent twice draw its children once (x under y under x froze the
    // tab for good); without it (no id sent twice) each span is in one list and walked once.
    function walk(root, depth0, out, seen) {
      const spans = [root];
      const depths = [depth0];
      const hiddens = [false];
      let walked = 0;
      while (spans.length) {
        const s = spans.pop();
        const depth = depths.pop();
        const hidden = hiddens.pop();
        if (seen && seen.reached.has(s)) continue;
        let kids = t.children.get(s.s) || NONE;
        if (seen) {
          seen.reached.add(s);
          if (seen.opened.has(s.s)) kids = NONE;
          seen.opened.add(s.s);
        }
        walked++;
        if (!hidden) {
          const row = { span: s, depth, kids: kids.length };
          out.push(row);
          t.shown.set(s, row);
        }
        const under = hidden || collapsed.has(s.s);
        for (let i = kids.length - 1; i >= 0; i--) {
          spans.push(kids[i]);
          depths.push(depth + 1);
          hiddens.push(under);
        }
      }
      return walked;
    }

    // The rows again from the tree as it is (built, or not changed in place). A span whose
    // parent chain never reaches a root (two spans each the other's parent, a span its own)
    // starts a tree of its own after the others: before, a ring was left off the page.
    function again(spans) {
      t.shown = new Map();
      t.rows = [];
      let walked = 0;
      if (!t.twice) for (const root of t.roots) walked += walk(root, 0, t.rows, null);
      t.plain = !t.twice && walked === spans.length;
      if (t.plain) return t.rows;
      t.shown = new Map();
      t.rows = [];
      const seen = { reached: new Set(), opened: new Set() };
      for (const root of t.roots) walk(root, 0, t.rows, seen);
      const left = spans.filter((s) => !seen.reached.has(s)).sort(byStart);
      for (const s of left) walk(s, 0, t.rows, seen);
      return t.rows;
    }

    function build(spans) {
      t.ids = new Map();
      t.children = new Map();
      t.roots = [];
      t.waiting = new Map();
      for (const s of spans) if (!t.ids.has(s.s)) t.ids.set(s.s, s);
      for (const s of spans) {
        if (s.p && s.p !== s.s && t.ids.has(s.p)) {
          if (!t.children.has(s.p)) t.children.set(s.p, []);
          t.children.get(s.p).push(s);
        } else {
          t.roots.push(s);
          if (s.p && s.p !== s.s) {
            if (!t.waiting.has(s.p)) t.waiting.set(s.p, []);
            t.waiting.get(s.p).push(s);
          }
        }
      }
      t.roots.sort(byStart);
      for (const list of t.children.values()) list.sort(byStart);
      t.twice = t.ids.size !== spans.length;
      return again(spans);
    }

    // The parent of `s` in the tree (none for a root).
    function parentOf(s) {
      return s.p && s.p !== s.s ? t.ids.get(s.p) : undefined;
    }

    // Whether `s`'s parent chain, from `id` up, reaches `s`: taking its waiting children
    // under it made a ring.
    function ringed(s, id) {
      for (let up = t.ids.get(id); up; up = parentOf(up)) {
        if (up === s) return true;
      }
      return false;
    }

    // The index of the row after the rows of `s` and what is under it (shown, or to be): that
    // of the span after it among its siblings, or after its parent among theirs, and so on up.
    function after(s) {
      for (let up = s; up; up = parentOf(up)) {
        const parent = parentOf(up);
        const list = parent ? t.children.get(parent.s) : t.roots;
        const next = list[indexIn(list, up) + 1];
        if (next) return t.rows.lastIndexOf(t.shown.get(next));
      }
      return t.rows.length;
    }

    // Takes the rows from `from` to the end of what is under `row` (at `at`) off the page.
    function unshow(row, at, from) {
      let end = at + 1;
      while (end < t.rows.length && t.rows[end].depth > row.depth) end++;
      const gone = t.rows.splice(from, end - from);
      if (gone.length > t.rows.length) {
        // most of the rows: a map of those left (a map emptied one by one stays slow to fill)
        t.shown = new Map(t.rows.map((row) => [row.span, row]));
      } else for (const row of gone) t.shown.delete(row.span);
    }

    function show(at, rows) {
      // a spread of 100,000 arguments overflows the stack
      if (rows.length <= 4096) t.rows.splice(at, 0, ...rows);
      else t.rows = t.rows.slice(0, at).concat(rows, t.rows.slice(at));
    }

    // Puts `s` (a span id new to the tree) in its place; false when it cannot be (its id sent
    // twice, a ring): the tree is then built again.
    function put(s) {
      if (!t.plain || t.ids.has(s.s)) return false;
      t.ids.set(s.s, s);
      const adopted = t.waiting.get(s.s) || [];
      const parent = parentOf(s);
      if (parent && adopted.length && ringed(s, s.p)) return false;
      t.waiting.delete(s.s);
      for (const child of adopted) {
        t.roots.splice(indexIn(t.roots, child), 1);
        const row = t.shown.get(child);
        const at = t.rows.lastIndexOf(row);
        unshow(row, at, at);
      }
      if (adopted.length) t.children.set(s.s, adopted.sort(byStart));
      let siblings = t.roots;
      if (parent) {
        if (!t.children.has(s.p)) t.children.set(s.p, []);
        siblings = t.children.get(s.p);
      } else if (s.p && s.p !== s.s) {
        if (!t.waiting.has(s.p)) t.waiting.set(s.p, []);
        t.waiting.get(s.p).push(s);
      }
      siblings.splice(slot(siblings, s), 0, s);
      const above = parent && t.shown.get(parent);
      if (above) above.kids = siblings.length;
      if (parent && (!above || collapsed.has(parent.s))) return true; // under a closed span
      const rows = [];
      walk(s, above ? above.depth + 1 : 0, rows, null);
      show(after(s), rows);
      return true;
    }

    // `s` collapsed or opened again (`collapsed` says which it is now): the rows under it taken
    // off or put back in place, not every row drawn again (38-109 ms at 50,000 spans,
    // benchmarks/README.md, s-collapse); `all`, every span of the run, when the tree must be.
    function toggle(s, all) {
      const row = t.shown.get(s);
      if (!t.plain || !row) return again(all);
      const at = t.rows.lastIndexOf(row);
      unshow(row, at, at + 1);
      if (!collapsed.has(s.s)) {
        const rows = [];
        for (const kid of t.children.get(s.s) || NONE) walk(kid, row.depth + 1, rows, null);
        show(at + 1, rows);
      }
      return t.rows;
    }

    // Adds `spans` (appended to `all`, every span of the run): each put in place, or the tree
    // built again from `all` when one cannot be.
    function add(spans, all) {
      for (const s of spans) if (!put(s)) return build(all);
      return t.rows;
    }

    return Object.assign(t, { build, add, toggle });
  }

  return { make };
})();
