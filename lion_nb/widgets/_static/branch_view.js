// BranchView's front end: draws the window of entries the kernel sends.
// Every `html`, `arguments` and `result` string was rendered and sanitized in the kernel;
// every other string is set as text, never as HTML.

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

const META_LABELS = {
  model: "model",
  tokens: "tokens",
  cost_usd: "cost (USD)",
  duration: "duration (s)",
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

function actionButtons(model, entry) {
  const bar = el("span", "lnb-actions");
  for (const name of model.get("actions")) {
    const button = el("button", "lnb-action", name === "fork" ? "fork from here" : name);
    button.dataset.action = name;
    button.title = `${name} at this message`;
    button.addEventListener("click", () => model.send({ type: "action", name, id: entry.id }));
    bar.append(button);
  }
  return bar;
}

function drawEntry(model, entry) {
  const node = el("div", `lnb-entry lnb-role-${entry.role} lnb-kind-${entry.kind}`);
  node.dataset.id = entry.id;
  node.dataset.index = String(entry.index);
  const head = el("div", "lnb-entry-head");
  const info = el("button", "lnb-info", "details");
  info.title = "details";
  const meta = details(entry.meta || {});
  meta.hidden = true;
  info.addEventListener("click", () => (meta.hidden = !meta.hidden));
  if (entry.kind === "action") {
    const box = el("details", "lnb-tool");
    const state = entry.pending ? "running…" : entry.is_error ? "error" : "done";
    const summary = el("summary");
    summary.append(el("span", "lnb-role", "tool"), el("code", "lnb-fn", entry.server ? `${entry.server}/${entry.function}` : entry.function),
      el("span", `lnb-tool-state lnb-tool-${entry.pending ? "pending" : entry.is_error ? "error" : "ok"}`, state));
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
    const body = el("div", "lnb-body");
    body.innerHTML = entry.html;
    node.append(body);
  }
  head.append(info, actionButtons(model, entry));
  node.append(meta);
  return node;
}

function render({ model, el: root }) {
  const view = el("div", "lnb-view");
  const head = el("div", "lnb-head");
  const title = el("span", "lnb-title");
  const count = el("span", "lnb-count");
  const status = el("span", "lnb-status");
  head.append(title, count, status);
  const more = el("button", "lnb-more");
  const latest = el("button", "lnb-latest", "jump to the latest");
  const list = el("div", "lnb-list");
  const stream = el("div", "lnb-stream lnb-role-assistant");
  view.append(head, more, list, stream, latest);
  root.append(view);

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
    count.textContent = ` · ${total} message${total === 1 ? "" : "s"}`;
    more.hidden = start <= 0;
    more.textContent = `show earlier messages (${start} before these)`;
    latest.hidden = model.get("following");
    const height = model.get("height");
    list.style.maxHeight = height || "";
    list.style.overflowY = height ? "auto" : "";
    const nearBottom = list.scrollHeight - list.scrollTop - list.clientHeight < 40;
    list.replaceChildren(...entries.map((entry) => drawEntry(model, entry)));
    if (height && model.get("following") && nearBottom) list.scrollTop = list.scrollHeight;
    drawStream();
  }

  function drawStream() {
    const html = model.get("stream_html");
    stream.hidden = !html;
    stream.innerHTML = html;
  }

  function drawStatus() {
    status.textContent = model.get("status") ? ` · ${model.get("status")}` : "";
  }

  model.on("change:entries", draw);
  model.on("change:total", draw);
  model.on("change:actions", draw);
  model.on("change:following", draw);
  model.on("change:stream_html", drawStream);
  model.on("change:status", drawStatus);
  draw();
  drawStatus();
  return () => {
    model.off("change:entries", draw);
    model.off("change:total", draw);
    model.off("change:actions", draw);
    model.off("change:following", draw);
    model.off("change:stream_html", drawStream);
    model.off("change:status", drawStatus);
  };
}

export default { render };
