// BranchView's front end: draws the window of entries the kernel sends.
// Every `html`, `arguments` and `result` string was rendered and sanitized in the kernel;
// every other string is set as text, never as HTML. An answer's thinking is a folded section
// (`thinkingSection`, in _shared.js); the streamed answer's thinking is one, live.

const META_LABELS = {
  model: "model",
  tokens: "tokens",
  cost_usd: "cost (USD)",
  duration: "duration (s)",
  thinking: "thinking",
  reasoning_tokens: "thinking tokens",
  cell: "cell",
  created: "time",
  kind: "kind",
};

function details(meta) {
  const box = el("div", "lnb-details");
  for (const [key, label] of Object.entries(META_LABELS)) {
    if (meta[key] === undefined || meta[key] === null) continue;
    let value = meta[key];
    if (key === "duration" && typeof value === "number") value = value.toFixed(2);
    const row = el("div", "lnb-detail");
    row.append(el("span", "lnb-detail-key", label), el("span", "lnb-detail-value", String(value)));
    box.append(row);
  }
  return box;
}

function actionButtons(model, entry, where) {
  const bar = el("span", "lnb-actions");
  for (const name of model.get("actions")) {
    const text = name === "fork" ? "fork from here" : name;
    const button = el("button", "lnb-action", text);
    button.type = "button";
    button.dataset.action = name;
    button.dataset.control = `action-${name}`;
    button.title = `${name} at this message`;
    button.setAttribute("aria-label", `${text}: ${where}`);
    button.addEventListener("click", () => model.send({ type: "action", name, id: entry.id }));
    bar.append(button);
  }
  return bar;
}

// A message's images and files, as a list (`attachmentCells` is in _shared.js).
function drawAttachments(items, media) {
  const box = el("div", "lnb-attachments");
  box.setAttribute("role", "list");
  box.setAttribute("aria-label", "attachments");
  box.append(...attachmentCells(items, media));
  return box;
}

// `open`: the ids of entries whose details (or tool call) the reader opened; kept across
// redraws, which replace every entry.
function drawEntry(model, entry, open) {
  const node = el("div", `lnb-entry lnb-role-${entry.role} lnb-kind-${entry.kind}`);
  node.dataset.id = entry.id;
  node.dataset.index = String(entry.index);
  const where = `message ${entry.index + 1}, ${entry.kind === "action" ? "tool" : entry.role}`;
  node.setAttribute("aria-label", where);
  node.setAttribute("role", "article");
  const head = el("div", "lnb-entry-head");
  const info = el("button", "lnb-info", "details");
  info.type = "button";
  info.title = "details";
  info.dataset.control = "details";
  info.setAttribute("aria-label", `details of ${where}`);
  const meta = details(entry.meta || {});
  meta.id = uniqueId("lnb-details");
  info.setAttribute("aria-controls", meta.id);
  const showDetails = (shown) => {
    meta.hidden = !shown;
    info.setAttribute("aria-expanded", String(shown));
  };
  showDetails(open.has(`details:${entry.id}`));
  info.addEventListener("click", () => {
    const shown = meta.hidden;
    showDetails(shown);
    if (shown) open.add(`details:${entry.id}`);
    else open.delete(`details:${entry.id}`);
  });
  if (entry.kind === "action") {
    const box = el("details", "lnb-tool");
    box.open = open.has(`tool:${entry.id}`);
    box.addEventListener("toggle", () => {
      if (box.open) open.add(`tool:${entry.id}`);
      else open.delete(`tool:${entry.id}`);
    });
    const state = toolState(entry);
    const summary = el("summary");
    summary.dataset.control = "tool";
    const fn = entry.server ? `${entry.server}/${entry.function}` : entry.function;
    summary.append(el("span", "lnb-role", "tool"), el("code", "lnb-fn", fn),
      el("span", `lnb-tool-state lnb-tool-${state}`, TOOL_STATE_WORDS[state]));
    box.append(summary);
    const args = el("div", "lnb-tool-part");
    args.append(el("div", "lnb-tool-label", "arguments"));
    const argsBody = el("div");
    argsBody.innerHTML = entry.arguments;
    args.append(argsBody);
    const result = el("div", "lnb-tool-part");
    result.append(el("div", "lnb-tool-label", "result"));
    const resultBody = el("div");
    resultBody.innerHTML = entry.result;
    result.append(resultBody);
    box.append(args, result);
    head.append(box);
    node.append(head);
  } else {
    head.append(el("span", "lnb-role", entry.role));
    node.append(head);
    if (entry.thinking) { // a recorded answer's thinking: folded unless the reader opened it
      const key = `thinking:${entry.id}`;
      const thought = thinkingSection(null, (shown) => {
        if (shown) open.add(key);
        else open.delete(key);
      });
      thought.update({ ...entry.thinking, running: false }, open.has(key));
      node.append(thought.box);
    }
    const body = el("div", "lnb-body");
    body.innerHTML = entry.html;
    node.append(body);
    if (entry.attachments && entry.attachments.length) {
      node.append(drawAttachments(entry.attachments, model.get("media")));
    }
  }
  head.append(info, actionButtons(model, entry, where));
  node.append(meta);
  return node;
}

// Where the keyboard focus is inside `list`, as (entry id, entry index, control), so a
// redraw can put it back on the same control of the same message -- or of the message at
// the same place, when the view switched to a fork of its branch.
function focusKey(list) {
  const active = document.activeElement;
  if (!active || !list.contains(active)) return null;
  const entry = active.closest(".lnb-entry");
  const control = active.closest("[data-control]");
  if (!entry) return null;
  return { id: entry.dataset.id, index: entry.dataset.index,
    control: control ? control.dataset.control : null };
}

function restoreFocus(list, key) {
  if (!key) return;
  const entry = list.querySelector(`.lnb-entry[data-id="${CSS.escape(key.id)}"]`) ||
    list.querySelector(`.lnb-entry[data-index="${CSS.escape(key.index)}"]`);
  let target = null;
  if (entry && key.control) target = entry.querySelector(`[data-control="${key.control}"]`);
  target = target || list;
  target.focus({ preventScroll: true });
}

function render({ model, el: root }) {
  const view = el("div", "lnb-view");
  const head = el("div", "lnb-head");
  const title = el("span", "lnb-title");
  const count = el("span", "lnb-count");
  const status = el("span", "lnb-status");
  head.append(title, count, status);
  const more = el("button", "lnb-more");
  more.type = "button";
  const latest = el("button", "lnb-latest", "jump to the latest");
  latest.type = "button";
  const list = el("div", "lnb-list");
  list.tabIndex = -1; // where focus goes when the control it was on is gone
  list.setAttribute("role", "region");
  const stream = el("div", "lnb-stream lnb-role-assistant");
  // The answer being streamed: a polite live region kept busy while it grows, so a screen
  // reader does not read it chunk by chunk; the end of the turn is announced once, below.
  stream.setAttribute("aria-live", "polite");
  stream.setAttribute("aria-label", "answer being written");
  const live = el("div", "lnb-sr-only lnb-live");
  live.setAttribute("role", "status");
  live.setAttribute("aria-live", "polite");
  live.setAttribute("aria-atomic", "true");
  // The streamed answer's thinking, above it: open while the model thinks, then folded.
  const thinking = thinkingSection((words) => { live.textContent = words; });
  let thinkingTimer = null;
  view.append(head, more, list, thinking.box, stream, latest, live);
  root.append(view);
  const open = new Set();

  more.addEventListener("click", () => {
    const start = Math.max(0, model.get("start") - model.get("page_size"));
    model.send({ type: "page", start });
  });
  latest.addEventListener("click", () => model.send({ type: "page", start: null }));

  function draw() {
    const entries = model.get("entries");
    const total = model.get("total");
    const start = model.get("start");
    title.textContent = model.get("title");
    list.setAttribute("aria-label", `messages of ${model.get("title")}`);
    count.textContent = ` · ${total} message${total === 1 ? "" : "s"}`;
    more.hidden = start <= 0;
    more.textContent = `show earlier messages (${start} before these)`;
    latest.hidden = model.get("following");
    const height = model.get("height");
    list.style.maxHeight = height || "";
    list.style.overflowY = height ? "auto" : "";
    const nearBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
    const key = focusKey(list);
    list.replaceChildren(...entries.map((entry) => drawEntry(model, entry, open)));
    restoreFocus(list, key);
    if (height && model.get("following") && nearBottom) list.scrollTop = list.scrollHeight;
    drawStream();
  }

  function drawStream() {
    const html = model.get("stream_html");
    stream.hidden = !html;
    stream.setAttribute("aria-busy", String(Boolean(html)));
    stream.innerHTML = html;
  }

  function drawThinking() {
    const state = model.get("thinking_state");
    thinking.update(state);
    if (state.running && thinkingTimer === null) thinkingTimer = setInterval(thinking.tick, 100);
    if (!state.running && thinkingTimer !== null) {
      clearInterval(thinkingTimer);
      thinkingTimer = null;
    }
  }

  function announce() {
    live.textContent = model.get("announcement");
  }

  function drawStatus() {
    status.textContent = model.get("status") ? ` · ${model.get("status")}` : "";
  }

  model.on("change:entries", draw);
  model.on("change:media", draw);
  model.on("change:total", draw);
  model.on("change:actions", draw);
  model.on("change:following", draw);
  model.on("change:stream_html", drawStream);
  model.on("change:thinking_state", drawThinking);
  model.on("change:status", drawStatus);
  model.on("change:announcement", announce);
  draw();
  drawThinking();
  drawStatus();
  return () => {
    if (thinkingTimer !== null) clearInterval(thinkingTimer);
    model.off("change:thinking_state", drawThinking);
    model.off("change:entries", draw);
    model.off("change:media", draw);
    model.off("change:total", draw);
    model.off("change:actions", draw);
    model.off("change:following", draw);
    model.off("change:stream_html", drawStream);
    model.off("change:status", drawStatus);
    model.off("change:announcement", announce);
  };
}

export default { render };
