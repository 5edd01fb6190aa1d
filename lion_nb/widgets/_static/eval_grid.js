// EvalGrid's front end: a grid of marks (prompts x models columns, cases as rows) and the
// detail of the opened cell. Every value is plain data set with textContent, never as HTML:
// answers are model output. The grid follows the WAI-ARIA grid pattern: one cell is in the
// tab order (roving tabindex), arrows / Home / End move, Enter or Space opens the cell.

const SYMBOL = { pass: "✓", fail: "✗", flaky: "~", pending: "…" };
const WORD = { pass: "passed", fail: "failed", flaky: "flaky", pending: "not all in yet" };
const CHANGE = { down: " ↓", up: " ↑" };
const CHANGE_WORD = { down: ", regressed", up: ", fixed" };

function shown(row, mode) {
  if (mode === "differences") {
    const states = new Set(row.map((c) => c[0]));
    return states.size > 1 || states.has("flaky");
  }
  if (mode === "changes") return row.some((c) => c[2]);
  return true;
}

function render({ model, el: root }) {
  const box = el("div", "lnb-evalgrid");
  const head = el("div", "lnb-evalgrid-head");
  const title = el("span", "lnb-evalgrid-title");
  const status = el("span", "lnb-evalgrid-status");
  status.setAttribute("aria-live", "polite");
  head.append(title, status);

  const controls = el("div", "lnb-evalgrid-controls");
  const diffLabel = el("label", "lnb-evalgrid-toggle");
  const diff = el("input", "lnb-evalgrid-differences");
  diff.type = "checkbox";
  diffLabel.append(diff, document.createTextNode(" show differences only"));
  const changesLabel = el("label", "lnb-evalgrid-toggle");
  const changes = el("input", "lnb-evalgrid-changes");
  changes.type = "checkbox";
  changesLabel.append(changes, document.createTextNode(" regressions and fixes only"));
  controls.append(diffLabel, changesLabel);

  const scroller = el("div", "lnb-evalgrid-scroll");
  const table = el("div", "lnb-evalgrid-table");
  table.setAttribute("role", "grid");
  table.setAttribute("aria-label", "evaluation results: cases by prompt and model");
  table.setAttribute("data-lm-suppress-shortcuts", "true");
  scroller.append(table);
  const detail = el("div", "lnb-evalgrid-detail");
  detail.setAttribute("role", "region");
  detail.setAttribute("aria-live", "polite");
  detail.setAttribute("aria-label", "the opened cell");
  const empty = el("div", "lnb-evalgrid-empty");
  // One page of the cases the filter lets through is here; the kernel sends another page.
  const pager = el("div", "lnb-evalgrid-pager");
  pager.setAttribute("role", "group");
  pager.setAttribute("aria-label", "pages of cases");
  const previous = el("button", "lnb-evalgrid-previous", "◀ previous");
  const where = el("span", "lnb-evalgrid-where");
  where.setAttribute("aria-live", "polite");
  const next = el("button", "lnb-evalgrid-next", "next ▶");
  previous.type = next.type = "button";
  pager.append(previous, where, next);
  box.append(head, controls, scroller, empty, pager, detail);
  root.append(box);

  function pages() {
    const size = Math.max(1, model.get("page_size"));
    return Math.max(1, Math.ceil(model.get("shown_cases") / size));
  }
  function turnPage(step) {
    const page = Math.min(Math.max(0, model.get("page") + step), pages() - 1);
    if (page === model.get("page")) return;
    focus = [0, focus[1]];
    model.set("page", page);
    model.set("selected", []);
    model.save_changes();
  }
  previous.addEventListener("click", () => turnPage(-1));
  next.addEventListener("click", () => turnPage(1));
  function drawPager() {
    const size = Math.max(1, model.get("page_size"));
    const shownCases = model.get("shown_cases");
    const page = model.get("page");
    const total = model.get("total_cases");
    pager.hidden = pages() <= 1;
    previous.disabled = page <= 0;
    next.disabled = page >= pages() - 1;
    const first = shownCases ? page * size + 1 : 0;
    const last = Math.min(shownCases, (page + 1) * size);
    const of = shownCases === total ? `${total}` : `${shownCases} shown of ${total}`;
    where.textContent = ` cases ${first}–${last} of ${of} · page ${page + 1} of ${pages()} `;
  }

  let focus = [0, 0]; // [row, column] of the cell in the tab order

  function setFilter() {
    const mode = changes.checked ? "changes" : diff.checked ? "differences" : "all";
    model.set("filter", mode);
    model.save_changes();
  }
  diff.addEventListener("change", () => {
    if (diff.checked) changes.checked = false;
    setFilter();
  });
  changes.addEventListener("change", () => {
    if (changes.checked) diff.checked = false;
    setFilter();
  });

  function open(r, c) {
    model.set("selected", [r, c]);
    model.save_changes();
  }

  function visibleRows() {
    return [...table.querySelectorAll(".lnb-evalgrid-row:not([hidden]):not(.lnb-evalgrid-header)")];
  }

  function moveTo(rowNode, c) {
    const cells = rowNode.querySelectorAll(".lnb-evalgrid-cell");
    if (!cells.length) return;
    const col = Math.max(0, Math.min(c, cells.length - 1));
    for (const node of table.querySelectorAll(".lnb-evalgrid-cell")) node.tabIndex = -1;
    cells[col].tabIndex = 0;
    cells[col].focus();
    focus = [Number(rowNode.dataset.row), col];
  }

  table.addEventListener("keydown", (event) => {
    const cellNode = event.target.closest && event.target.closest(".lnb-evalgrid-cell");
    if (!cellNode) return;
    const rows = visibleRows();
    const rowNode = cellNode.parentElement;
    const at = rows.indexOf(rowNode);
    const c = Number(cellNode.dataset.col);
    let handled = true;
    if (event.key === "ArrowRight") moveTo(rowNode, c + 1);
    else if (event.key === "ArrowLeft") moveTo(rowNode, c - 1);
    else if (event.key === "ArrowDown" && at < rows.length - 1) moveTo(rows[at + 1], c);
    else if (event.key === "ArrowUp" && at > 0) moveTo(rows[at - 1], c);
    else if (event.key === "Home") moveTo(event.ctrlKey ? rows[0] : rowNode, 0);
    else if (event.key === "End")
      moveTo(event.ctrlKey ? rows[rows.length - 1] : rowNode, model.get("columns").length - 1);
    else if (event.key === "Enter" || event.key === " ") open(Number(rowNode.dataset.row), c);
    else handled = false;
    if (handled) {
      event.preventDefault();
      event.stopPropagation();
    }
  });

  function drawGrid() {
    const columns = model.get("columns") || [];
    const labels = model.get("case_labels") || [];
    const marks = model.get("marks") || [];
    const mode = model.get("filter");
    const selected = model.get("selected") || [];
    const hadFocus = table.contains(document.activeElement);
    title.textContent = model.get("title");
    status.textContent = ` · ${model.get("status")}`;
    diff.checked = mode === "differences";
    changes.checked = mode === "changes";
    changesLabel.hidden = !model.get("has_changes");
    scroller.style.maxHeight = model.get("height");
    table.style.gridTemplateColumns = `minmax(8em, 16em) repeat(${columns.length}, minmax(5em, 1fr))`;

    const header = el("div", "lnb-evalgrid-row lnb-evalgrid-header");
    header.setAttribute("role", "row");
    const corner = el("span", "lnb-evalgrid-case", "case");
    corner.setAttribute("role", "columnheader");
    header.append(corner);
    for (const name of columns) {
      const th = el("span", "lnb-evalgrid-colhead", name);
      th.setAttribute("role", "columnheader");
      header.append(th);
    }
    const nodes = [header];
    let count = 0;
    let focusRow = null;
    for (let r = 0; r < marks.length; r++) {
      const row = el("div", "lnb-evalgrid-row");
      row.setAttribute("role", "row");
      row.dataset.row = String(r);
      row.hidden = !shown(marks[r], mode);
      if (!row.hidden) count += 1;
      const label = el("span", "lnb-evalgrid-case", labels[r]);
      label.setAttribute("role", "rowheader");
      row.append(label);
      marks[r].forEach(([state, counts, change], c) => {
        const cell = el(
          "span",
          `lnb-evalgrid-cell lnb-evalgrid-${state}` + (change ? ` lnb-evalgrid-${change}` : ""),
          `${SYMBOL[state] || "?"}${counts ? " " + counts : ""}${CHANGE[change] || ""}`,
        );
        cell.setAttribute("role", "gridcell");
        cell.dataset.col = String(c);
        cell.tabIndex = -1;
        cell.setAttribute(
          "aria-label",
          `${columns[c]}: ${WORD[state] || state}${counts ? ", " + counts : ""}${CHANGE_WORD[change] || ""}`,
        );
        if (selected[0] === r && selected[1] === c) cell.setAttribute("aria-selected", "true");
        cell.addEventListener("click", () => {
          moveTo(row, c);
          open(r, c);
        });
        row.append(cell);
      });
      if (!row.hidden && (focusRow === null || r === focus[0])) focusRow = row;
      nodes.push(row);
    }
    table.replaceChildren(...nodes);
    empty.hidden = count > 0;
    empty.textContent = marks.length ? "every row agrees: nothing to show" : "no cases yet";
    if (focusRow) {
      const cells = focusRow.querySelectorAll(".lnb-evalgrid-cell");
      const col = Math.min(focus[1], cells.length - 1);
      if (cells[col]) {
        cells[col].tabIndex = 0;
        if (hadFocus) cells[col].focus({ preventScroll: true }); // a redraw keeps the place
      }
    }
  }

  function drawDetail() {
    const data = model.get("detail") || {};
    if (!data.title) {
      detail.replaceChildren();
      detail.hidden = true;
      return;
    }
    detail.hidden = false;
    const nodes = [el("div", "lnb-evalgrid-detail-title", data.title)];
    for (const entry of data.entries || []) {
      const item = el("div", `lnb-evalgrid-entry lnb-evalgrid-${entry.state}`);
      const word = entry.status === "done" || entry.status === "failed" ? WORD[entry.state] : entry.status;
      item.append(el("div", "lnb-evalgrid-entry-head", `repeat ${entry.repeat + 1}: ${SYMBOL[entry.state] || ""} ${word}`));
      item.append(el("pre", "lnb-evalgrid-answer", entry.answer || ""));
      if (entry.reasons && entry.reasons.length) {
        const list = el("ul", "lnb-evalgrid-reasons");
        for (const reason of entry.reasons) list.append(el("li", "", reason));
        item.append(list);
      }
      nodes.push(item);
    }
    detail.replaceChildren(...nodes);
  }

  const redraw = () => {
    drawGrid();
    drawPager();
  };
  model.on("change:marks", redraw);
  model.on("change:filter", redraw);
  model.on("change:columns", redraw);
  model.on("change:status", () => {
    status.textContent = ` · ${model.get("status")}`;
  });
  model.on("change:has_changes", redraw);
  model.on("change:page", drawPager);
  model.on("change:shown_cases", drawPager);
  model.on("change:total_cases", drawPager);
  model.on("change:detail", drawDetail);
  drawGrid();
  drawPager();
  drawDetail();
  return () => {
    model.off("change:marks", redraw);
    model.off("change:filter", redraw);
    model.off("change:columns", redraw);
    model.off("change:has_changes", redraw);
    model.off("change:page", drawPager);
    model.off("change:shown_cases", drawPager);
    model.off("change:total_cases", drawPager);
    model.off("change:detail", drawDetail);
  };
}

export default { render };
