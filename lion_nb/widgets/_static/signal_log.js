// SignalLog's front end: a table of the rows the kernel sends, filtered here.
// The kernel sends its ring of rows by column ({seq: [...], kind: [...], ...}); every value
// is plain data and is set with textContent, never as HTML.
// Rows are drawn once and kept by `seq`: an update appends the new rows and removes the ones
// that left the kernel's ring; a filter change only toggles `hidden`. Rows are grid <div>s
// with `content-visibility: auto`, not a <table>: measured in Chromium, laying out a
// 1,000-row table took 10x longer, since a table lays out every row, even off screen.

function duration(value) {
  return typeof value === "number" ? `${value.toFixed(value < 10 ? 2 : 1)} s` : "";
}

function cell(cls, text) {
  const node = el("span", cls, text);
  node.setAttribute("role", "cell");
  return node;
}

function drawRow(row) {
  const tr = el("div", `lnb-siglog-row lnb-siglog-k-${row.kind}`);
  tr.setAttribute("role", "row");
  tr.dataset.seq = String(row.seq);
  tr.dataset.kind = row.kind;
  const branch = cell("lnb-siglog-branch", row.branch);
  if (row.branch_id) branch.title = row.branch_id;
  tr.append(
    cell("lnb-siglog-time", row.time),
    cell("lnb-siglog-kind", row.kind),
    branch,
    cell("lnb-siglog-summary", row.summary),
    cell("lnb-siglog-duration", duration(row.duration)),
  );
  tr._haystack = `${row.branch}\n${row.summary}`.toLowerCase();
  return tr;
}

function rowAt(columns, i) {
  const row = {};
  for (const name of Object.keys(columns)) row[name] = columns[name][i];
  return row;
}

function render({ model, el: root }) {
  const box = el("div", "lnb-signals lnb-siglog");
  const head = el("div", "lnb-siglog-head");
  const title = el("span", "lnb-siglog-title");
  const count = el("span", "lnb-siglog-count");
  head.append(title, count);
  const controls = el("div", "lnb-siglog-controls");
  const chips = el("span", "lnb-siglog-chips");
  const search = el("input", "lnb-siglog-query");
  search.type = "search";
  search.placeholder = "filter branch or text";
  search.setAttribute("aria-label", "filter signals by branch or text");
  controls.append(chips, search);
  chips.setAttribute("role", "group");
  chips.setAttribute("aria-label", "show only these kinds");
  const scroller = el("div", "lnb-siglog-scroll");
  // The rows are a `log` (new rows are read politely as they arrive) and the scroller takes
  // the focus, so its rows can be scrolled from the keyboard.
  scroller.setAttribute("role", "log");
  scroller.setAttribute("aria-label", "signals");
  scroller.tabIndex = 0;
  const table = el("div", "lnb-siglog-table");
  table.setAttribute("role", "table");
  const headRow = el("div", "lnb-siglog-row lnb-siglog-header");
  headRow.setAttribute("role", "row");
  for (const name of ["time", "kind", "branch", "summary", "duration"]) {
    const th = el("span", `lnb-siglog-${name}`, name);
    th.setAttribute("role", "columnheader");
    headRow.append(th);
  }
  const tbody = el("div", "lnb-siglog-body");
  tbody.setAttribute("role", "rowgroup");
  table.append(headRow, tbody);
  const empty = el("div", "lnb-siglog-empty", "no signals yet");
  scroller.append(table, empty);
  box.append(head, controls, scroller);
  root.append(box);

  const drawn = new Map(); // seq -> its row
  let lastSeq = -1;
  let typing = null;
  let following = true; // pinned to the newest row while the reader is at the bottom
  scroller.addEventListener("scroll", () => {
    following = scroller.scrollHeight - scroller.scrollTop - scroller.clientHeight < 24;
  });

  function filter() {
    const kinds = new Set(model.get("kinds"));
    const needle = (search.value || "").trim().toLowerCase();
    let shown = 0;
    for (const tr of drawn.values()) {
      const visible =
        (kinds.size === 0 || kinds.has(tr.dataset.kind)) &&
        (!needle || tr._haystack.includes(needle));
      tr.hidden = !visible;
      if (visible) shown += 1;
    }
    const dropped = model.get("dropped");
    count.textContent =
      ` · ${shown} of ${drawn.size} shown` + (dropped ? ` · ${dropped} older dropped` : "");
    empty.hidden = shown > 0;
    empty.textContent = drawn.size ? "no signal matches the filter" : "no signals yet";
  }

  function drawChips() {
    const active = document.activeElement;
    const focusedKind = active && chips.contains(active) ? active.dataset.kind : null;
    const selected = new Set(model.get("kinds"));
    const counts = {};
    for (const tr of drawn.values()) counts[tr.dataset.kind] = (counts[tr.dataset.kind] || 0) + 1;
    const nodes = [];
    for (const kind of model.get("known_kinds")) {
      const chip = el("button", "lnb-siglog-chip", `${kind} ${counts[kind] || 0}`);
      chip.setAttribute("aria-label", `${kind}, ${counts[kind] || 0}`);
      chip.type = "button";
      chip.dataset.kind = kind;
      chip.setAttribute("aria-pressed", selected.has(kind) ? "true" : "false");
      chip.title = "show only the selected kinds (none selected: every kind)";
      chip.addEventListener("click", () => {
        const now = new Set(model.get("kinds"));
        if (now.has(kind)) now.delete(kind);
        else now.add(kind);
        model.set("kinds", [...now].sort());
        model.save_changes();
      });
      nodes.push(chip);
    }
    chips.replaceChildren(...nodes);
    if (focusedKind) {
      const again = nodes.find((chip) => chip.dataset.kind === focusedKind);
      if (again) again.focus({ preventScroll: true }); // the redraw keeps the reader's place
    }
  }

  function drawRows(again) {
    const columns = model.get("columns") || {};
    const seqs = columns.seq || [];
    const keep = new Set(seqs);
    for (const [seq, tr] of drawn) {
      if (!keep.has(seq)) {
        tr.remove();
        drawn.delete(seq);
      }
    }
    if (drawn.size === 0) lastSeq = -1;
    const fresh = document.createDocumentFragment();
    for (let i = 0; i < seqs.length; i += 1) {
      const seq = seqs[i];
      if (drawn.has(seq)) continue;
      if (seq < lastSeq && again !== true) {
        // out of order (the ring only drops old rows and appends new ones): draw it all again
        drawn.clear();
        tbody.replaceChildren();
        lastSeq = -1;
        return drawRows(true);
      }
      const tr = drawRow(rowAt(columns, i));
      drawn.set(seq, tr);
      fresh.append(tr);
      lastSeq = seq;
    }
    tbody.append(fresh);
    filter();
    drawChips();
    if (following) scroller.scrollTop = scroller.scrollHeight;
  }

  function redraw() {
    drawRows(false);
  }

  function drawFrame() {
    title.textContent = model.get("title") || "signals";
    scroller.style.maxHeight = model.get("height") || "";
  }

  function fromKernelQuery() {
    if (search.value !== model.get("query")) search.value = model.get("query");
    filter();
  }

  function onKinds() {
    filter();
    drawChips();
  }

  search.addEventListener("input", () => {
    filter(); // at once, here
    clearTimeout(typing); // the kernel learns the query once typing pauses
    typing = setTimeout(() => {
      model.set("query", search.value);
      model.save_changes();
    }, 250);
  });

  model.on("change:columns", redraw);
  model.on("change:dropped", filter);
  model.on("change:kinds", onKinds);
  model.on("change:known_kinds", drawChips);
  model.on("change:query", fromKernelQuery);
  model.on("change:title", drawFrame);
  model.on("change:height", drawFrame);
  search.value = model.get("query");
  drawFrame();
  redraw();
  return () => {
    clearTimeout(typing);
    model.off("change:columns", redraw);
    model.off("change:dropped", filter);
    model.off("change:kinds", onKinds);
    model.off("change:known_kinds", drawChips);
    model.off("change:query", fromKernelQuery);
    model.off("change:title", drawFrame);
    model.off("change:height", drawFrame);
  };
}

export default { render };
