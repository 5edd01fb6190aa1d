// TurnWidget's front end: a live turn with its tool calls, streamed text and a Stop button.
// `text_html`, `arguments` and `result` were sanitized in the kernel; other strings are text.

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

function drawStep(step) {
  const box = el("details", "lnb-tool lnb-step");
  const state = step.pending ? "running…" : step.is_error ? "error" : "done";
  const summary = el("summary");
  summary.append(el("span", "lnb-role", "tool"), el("code", "lnb-fn", step.server ? `${step.server}/${step.function}` : step.function),
    el("span", `lnb-tool-state lnb-tool-${step.pending ? "pending" : step.is_error ? "error" : "ok"}`, state));
  const args = el("div");
  args.innerHTML = step.arguments;
  const result = el("div");
  result.innerHTML = step.result;
  box.append(summary, el("div", "lnb-tool-label", "arguments"), args,
    el("div", "lnb-tool-label", "result"), result);
  return box;
}

function drawAsk(ask, model) {
  // a tool call waiting for approval (approve="ask"): Approve / Deny / always for this tool
  const box = el("div", "lnb-ask");
  const where = ask.server ? `${ask.server}/${ask.tool}` : ask.tool;
  box.append(el("span", "lnb-role", "approve?"), el("code", "lnb-fn", where));
  const args = el("div");
  args.innerHTML = ask.arguments;
  const buttons = el("div", "lnb-ask-buttons");
  for (const [decision, label] of [["approve", "Approve"], ["deny", "Deny"],
    ["always", "Approve for this tool from now on"]]) {
    const button = el("button", `lnb-ask-${decision}`, label);
    button.addEventListener("click", () => {
      for (const b of buttons.children) b.disabled = true;
      model.send({ type: "approval", id: ask.id, decision });
    });
    buttons.append(button);
  }
  box.append(args, buttons);
  return box;
}

function render({ model, el: root }) {
  const box = el("div", "lnb-turn");
  const head = el("div", "lnb-turn-head");
  const label = el("span", "lnb-turn-label");
  const status = el("span", "lnb-turn-status");
  const clock = el("span", "lnb-turn-clock");
  const tokens = el("span", "lnb-turn-tokens");
  const stop = el("button", "lnb-stop", "■ Stop");
  stop.title = "Stop this turn (what was received so far is kept)";
  head.append(label, status, clock, tokens, stop);
  const note = el("div", "lnb-turn-note");
  const steps = el("div", "lnb-steps");
  const asks = el("div", "lnb-asks");
  const text = el("div", "lnb-turn-text");
  box.append(head, note, steps, asks, text);
  root.append(box);

  stop.addEventListener("click", () => {
    stop.disabled = true;
    model.send({ type: "stop" });
  });

  let timer = null;
  function tick() {
    const seconds = model.get("running")
      ? (Date.now() - model.get("started")) / 1000
      : model.get("elapsed");
    clock.textContent = seconds > 0 ? ` · ${seconds.toFixed(1)} s` : "";
  }
  function drawHead() {
    label.textContent = model.get("head");
    status.textContent = model.get("status") ? ` · ${model.get("status")}` : "";
    const n = model.get("tokens");
    tokens.textContent = n ? ` · ${n} tokens` : "";
    note.textContent = model.get("note");
    note.hidden = !model.get("note");
    stop.hidden = !model.get("running");
    stop.disabled = !model.get("stoppable");
    box.classList.toggle("lnb-running", model.get("running"));
    if (model.get("running") && timer === null) timer = setInterval(tick, 100);
    if (!model.get("running") && timer !== null) {
      clearInterval(timer);
      timer = null;
    }
    tick();
  }
  function drawSteps() {
    steps.replaceChildren(...model.get("steps").map(drawStep));
  }
  function drawAsks() {
    asks.replaceChildren(...model.get("asks").map((ask) => drawAsk(ask, model)));
  }
  function drawText() {
    text.innerHTML = model.get("text_html");
    text.hidden = !model.get("text_html");
  }
  const names = ["head", "status", "running", "stoppable", "tokens", "elapsed", "note"];
  for (const name of names) model.on(`change:${name}`, drawHead);
  model.on("change:steps", drawSteps);
  model.on("change:asks", drawAsks);
  model.on("change:text_html", drawText);
  drawHead();
  drawSteps();
  drawAsks();
  drawText();
  return () => {
    if (timer !== null) clearInterval(timer);
    for (const name of names) model.off(`change:${name}`, drawHead);
    model.off("change:steps", drawSteps);
    model.off("change:asks", drawAsks);
    model.off("change:text_html", drawText);
  };
}

export default { render };
