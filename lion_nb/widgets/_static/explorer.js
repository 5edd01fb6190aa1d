// SessionExplorer's left pane: search box and results, the branch tree, the session's map
// runs (one row each; a page of a run's items on request), export buttons.
// Result snippets are escaped in the kernel (the match wrapped in <mark>); every other
// string is set as text. Clicks go to the kernel, which owns the selection.

// One branch as a WAI-ARIA `treeitem`: the <li> holds the focus (a roving tabindex) and its
// sub-branches' `group`; `.lnb-node` inside is the row a pointer clicks.
function nodeItem(model, node, depth) {
  const item = el("li", "lnb-tree-item");
  item.dataset.id = node.id;
  item.setAttribute("role", "treeitem");
  item.setAttribute("aria-level", String(depth + 1));
  item.tabIndex = -1;
  const row = el("div", "lnb-node");
  row.dataset.id = node.id;
  const selected = node.id === model.get("selected");
  item.setAttribute("aria-selected", String(selected));
  if (selected) row.classList.add("lnb-node-selected");
  const name = el("span", "lnb-node-name", node.name);
  const facts = [plural(node.count, "message")];
  if (node.fork_index !== null && node.fork_index !== undefined) {
    facts.push(`from #${node.fork_index + 1}`);
  }
  const meta = el("span", "lnb-node-meta", facts.join(" · "));
  const usage = [];
  if (node.tokens !== null && node.tokens !== undefined) {
    usage.push(`${node.tokens.toLocaleString()} tokens`);
  }
  usage.push(`cost ${node.cost}`);
  const models = el("span", "lnb-node-models", (node.models || []).join(", "));
  const spend = el("span", "lnb-node-usage", usage.join(" · "));
  const id = uniqueId("lnb-node");
  name.id = `${id}-name`;
  meta.id = `${id}-meta`;
  models.id = `${id}-models`;
  spend.id = `${id}-usage`;
  item.setAttribute("aria-labelledby", name.id);
  item.setAttribute("aria-describedby", `${meta.id} ${models.id} ${spend.id}`);
  row.append(name, meta, models, spend);
  row.title = `${node.name}\n${facts.join(" · ")}\n${(node.models || []).join(", ")}\n${usage.join(" · ")}`;
  item.append(row);
  return item;
}

// Nodes arrive in pre-order with a depth: rebuild the nesting as lists.
function drawTree(model, box) {
  const top = el("ul", "lnb-tree-list");
  top.setAttribute("role", "tree");
  top.setAttribute("aria-label", "branches");
  const stack = [top];
  let last = null;
  for (const node of model.get("nodes")) {
    const depth = node.depth;
    while (stack.length > depth + 1) stack.pop();
    if (stack.length < depth + 1 && last) {
      const nested = el("ul", "lnb-tree-list");
      nested.setAttribute("role", "group");
      last.append(nested);
      last.setAttribute("aria-expanded", "true");
      stack.push(nested);
    }
    const item = nodeItem(model, node, stack.length - 1);
    stack[stack.length - 1].append(item);
    last = item;
  }
  box.replaceChildren(top);
  return top;
}

// The tree from the keyboard (the WAI-ARIA tree pattern; every branch is shown, so every
// parent is expanded): Up/Down the previous/next branch, Home/End the first/last, Right the
// first sub-branch, Left the parent; selection follows the focus, as a pointer's click does.
// Handled keys go no further, and `data-lm-suppress-shortcuts` keeps JupyterLab's own
// shortcuts (arrows move the active cell there) from firing while the tree has the focus.
function treeKey(event, box, focusItem) {
  const items = [...box.querySelectorAll('[role="treeitem"]')];
  const current = event.target.closest('[role="treeitem"]');
  const at = items.indexOf(current);
  if (at < 0) return;
  let next = null;
  switch (event.key) {
    case "ArrowDown": next = items[Math.min(at + 1, items.length - 1)]; break;
    case "ArrowUp": next = items[Math.max(at - 1, 0)]; break;
    case "Home": next = items[0]; break;
    case "End": next = items[items.length - 1]; break;
    case "ArrowRight": next = current.querySelector('[role="treeitem"]') || current; break;
    case "ArrowLeft": next = current.parentElement.closest('[role="treeitem"]') || current; break;
    case "Enter": case " ": next = current; break;
    default: return;
  }
  event.preventDefault();
  event.stopPropagation();
  focusItem(next, true);
}

function drawResults(model, box, count) {
  const query = model.get("query");
  const results = model.get("results");
  const found = model.get("found");
  const more = model.get("more") ? "+" : "";
  box.hidden = !query;
  count.hidden = !query;
  count.textContent = found > results.length || more
    ? `${found}${more} matches, first ${results.length} shown`
    : `${found} match${found === 1 ? "" : "es"}`;
  box.replaceChildren(...results.map((result) => {
    const row = el("button", "lnb-result");
    row.type = "button";
    const item = result.run !== undefined; // an item of a run, not a member's message
    const where = el("span", "lnb-result-where", item
      ? `${result.name} · ${result.role}`
      : `${result.name} · #${result.index + 1} · ${result.role}`);
    const snippet = el("span", "lnb-result-snippet");
    snippet.innerHTML = result.snippet; // escaped in the kernel
    row.append(where, snippet);
    row.addEventListener("click", () => model.send(item
      ? { type: "open_item", run: result.run, index: result.index }
      : { type: "open", id: result.branch, index: result.index }));
    return row;
  }));
}

// A run's counts, as `%lion branches` gives them.
function runFacts(run) {
  const n = (value) => Number(value || 0).toLocaleString();
  return `${n(run.items)} items · ${n(run.done)} done · ${n(run.failed)} failed · ${n(run.pending)} left`;
}

// The page of a run's items shown: one button an item (it opens the item's branch), and
// previous / next through the run.
function runPage(model, page) {
  const box = el("div", "lnb-run-items");
  box.setAttribute("role", "group");
  box.setAttribute("aria-label", `items of ${page.run}`);
  const list = el("div", "lnb-run-rows");
  for (const row of page.rows) {
    const item = el("button", "lnb-run-item");
    item.type = "button";
    item.dataset.index = String(row.index);
    const head = el("span", "lnb-run-item-head", `[${row.index}] · ${row.status}`);
    const text = el("span", "lnb-run-item-text", row.item ? `${row.item} → ${row.result}` : row.result);
    item.append(head, text);
    item.addEventListener("click", () =>
      model.send({ type: "open_item", run: page.run, index: row.index }));
    list.append(item);
  }
  const pager = el("div", "lnb-run-pager");
  const previous = el("button", "lnb-action", "previous");
  previous.type = "button";
  previous.disabled = page.start <= 0;
  const next = el("button", "lnb-action", "next");
  next.type = "button";
  next.disabled = page.start + page.size >= page.total;
  const last = Math.min(page.start + page.size, page.total);
  const where = el("span", "lnb-run-where",
    page.total ? `items ${(page.start + 1).toLocaleString()}–${last.toLocaleString()} of ${page.total.toLocaleString()}` : "no items");
  where.setAttribute("aria-live", "polite");
  previous.addEventListener("click", () =>
    model.send({ type: "run_page", run: page.run, start: Math.max(0, page.start - page.size) }));
  next.addEventListener("click", () =>
    model.send({ type: "run_page", run: page.run, start: page.start + page.size }));
  pager.append(previous, where, next);
  box.append(list, pager);
  return box;
}

function drawRuns(model, box) {
  const runs = model.get("runs");
  const page = model.get("run_items") || {};
  box.hidden = !runs.length;
  const head = el("div", "lnb-runs-head", runs.length === 1 ? "1 run" : `${runs.length} runs`);
  const rows = runs.map((run) => {
    const row = el("div", "lnb-run");
    row.dataset.run = run.run;
    const line = el("div", "lnb-run-line");
    const name = el("span", "lnb-node-name", run.run);
    const facts = el("span", "lnb-node-meta", runFacts(run));
    const open = page.run === run.run;
    const toggle = el("button", "lnb-action lnb-run-toggle", open ? "hide items" : "items");
    toggle.type = "button";
    toggle.setAttribute("aria-expanded", String(open));
    toggle.setAttribute("aria-label", `${open ? "hide the items of" : "show the items of"} ${run.run}`);
    toggle.addEventListener("click", () =>
      model.send(open ? { type: "close_run" } : { type: "run_page", run: run.run, start: 0 }));
    line.append(name, toggle);
    row.append(line, facts);
    if (open) row.append(runPage(model, page));
    return row;
  });
  box.replaceChildren(head, ...rows);
}

function download(content, buffers) {
  const data = buffers && buffers.length ? buffers[0] : new TextEncoder().encode("");
  const blob = new Blob([data], { type: content.mime || "application/octet-stream" });
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = content.filename || "branch";
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 1000);
}

function render({ model, el: root }) {
  const pane = el("div", "lnb-tree");
  const head = el("div", "lnb-head");
  const title = el("span", "lnb-title");
  const count = el("span", "lnb-count");
  head.append(title, count);

  const search = el("input", "lnb-search");
  search.type = "search";
  search.placeholder = "search messages";
  search.setAttribute("aria-label", "search messages in every branch");
  search.value = model.get("query");
  const found = el("div", "lnb-found");
  const results = el("div", "lnb-results");

  const tree = el("div", "lnb-tree-box");
  tree.setAttribute("data-lm-suppress-shortcuts", "true");
  const runs = el("div", "lnb-runs");
  const bar = el("div", "lnb-export");
  const json = el("button", "lnb-action", "export JSON");
  json.type = "button";
  const markdown = el("button", "lnb-action", "export Markdown");
  markdown.type = "button";
  const status = el("span", "lnb-status");
  status.setAttribute("role", "status");
  bar.append(json, markdown, status);
  pane.append(head, search, found, results, tree, runs, bar);
  root.append(pane);

  let timer = null;
  search.addEventListener("input", () => {
    clearTimeout(timer);
    timer = setTimeout(() => model.send({ type: "search", query: search.value }), 250);
  });
  let focusedId = null; // the branch the keyboard is on; kept across redraws
  function focusItem(item, select) {
    if (!item) return;
    for (const other of tree.querySelectorAll('[role="treeitem"]')) other.tabIndex = -1;
    item.tabIndex = 0;
    focusedId = item.dataset.id;
    item.focus();
    if (select && item.getAttribute("aria-selected") !== "true") {
      model.send({ type: "select", id: item.dataset.id });
    }
  }
  tree.addEventListener("keydown", (event) => treeKey(event, tree, focusItem));
  tree.addEventListener("click", (event) => {
    const item = event.target.closest('[role="treeitem"]');
    if (item) focusItem(item, true);
  });
  tree.addEventListener("focusin", (event) => {
    const item = event.target.closest('[role="treeitem"]');
    if (item) focusedId = item.dataset.id;
  });

  json.addEventListener("click", () => model.send({ type: "export", fmt: "json" }));
  markdown.addEventListener("click", () => model.send({ type: "export", fmt: "markdown" }));

  function drawHead() {
    const nodes = model.get("nodes");
    title.textContent = model.get("title");
    count.textContent = ` · ${nodes.length} branch${nodes.length === 1 ? "" : "es"}`;
    const height = model.get("height");
    tree.style.maxHeight = height || "";
    tree.style.overflowY = height ? "auto" : "";
  }
  // A redraw replaces every item: the focus goes back to the branch it was on.
  const redrawTree = () => {
    drawHead();
    const hadFocus = tree.contains(document.activeElement);
    drawTree(model, tree);
    const items = [...tree.querySelectorAll('[role="treeitem"]')];
    const find = (id) => items.find((item) => item.dataset.id === id);
    const target = find(focusedId) || find(model.get("selected")) || items[0];
    if (!target) return;
    target.tabIndex = 0;
    if (hadFocus) target.focus({ preventScroll: true });
  };
  const redrawResults = () => {
    if (document.activeElement !== search) search.value = model.get("query");
    drawResults(model, results, found);
  };
  const drawStatus = () => (status.textContent = model.get("status"));
  const redrawRuns = () => drawRuns(model, runs);
  const onMessage = (content, buffers) => {
    if (content && content.type === "download") download(content, buffers);
  };

  const events = [
    ["change:nodes", redrawTree], ["change:selected", redrawTree], ["change:title", drawHead],
    ["change:height", drawHead], ["change:results", redrawResults],
    ["change:query", redrawResults], ["change:found", redrawResults],
    ["change:more", redrawResults], ["change:runs", redrawRuns], ["change:run_items", redrawRuns],
    ["change:status", drawStatus], ["msg:custom", onMessage],
  ];
  for (const [name, handler] of events) model.on(name, handler);
  redrawTree();
  redrawResults();
  redrawRuns();
  drawStatus();
  return () => {
    clearTimeout(timer);
    for (const [name, handler] of events) model.off(name, handler);
  };
}

export default { render };
