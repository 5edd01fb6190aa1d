// TurnWidget's front end: a live turn with its tool calls, streamed text, a Stop button,
// calls waiting for approval, a budget that stopped the turn, the cost footer and the model's
// thinking (`thinkingSection`, open while it thinks, folded once the answer starts).
// `text_html`, `arguments` and `result` were sanitized in the kernel; other strings are text.
// Keyboard: Esc anywhere in the turn (the box takes focus when clicked) stops it, as Stop
// does; when Stop disappears under the focus, the focus stays on the turn's box. A screen
// reader hears the end of the turn once (a polite status region), never each chunk; a call
// waiting for approval takes the focus and is announced there once.

// The front end's widget manager gives the kernel (JupyterLab, Notebook 7) and the notebook
// document (JupyterLab); elsewhere both are missing and Stop and "Insert below" do less.
function kernelOf(model) {
  const kernel = model.widget_manager && model.widget_manager.kernel;
  return kernel && typeof kernel.interrupt === "function" ? kernel : null;
}

// The index of the cell whose outputs show this widget, in the notebook's shared model.
function cellIndexOf(notebook, widgetId) {
  if (!widgetId) return -1;
  return notebook.cells.findIndex((cell) => cell.cell_type === "code" &&
    JSON.stringify(cell.getOutputs ? cell.getOutputs() : []).includes(widgetId));
}

// Put `source` as a new code cell below the turn's cell; else copy it. What was done, in words.
async function insertBelow(model, source) {
  const context = model.widget_manager && model.widget_manager.context;
  const notebook = context && context.model && context.model.sharedModel;
  const index = notebook ? cellIndexOf(notebook, model.get("widget_id")) : -1;
  if (index >= 0) {
    const below = notebook.cells[index + 1];
    if (below && below.getSource() === source) return "in the cell below"; // put there already
    notebook.insertCell(index + 1, { cell_type: "code", source });
    return "inserted below";
  }
  if (navigator.clipboard) {
    await navigator.clipboard.writeText(source);
    return "copied: paste it into a new cell";
  }
  return "select the code above to copy it";
}

const STOP_TITLE = "Stop this turn (what was received so far is kept); Esc does the same";

function drawStep(step, model, inserted) {
  const box = el("details", "lnb-tool lnb-step");
  const state = toolState(step);
  const summary = el("summary");
  summary.append(el("span", "lnb-role", "tool"), el("code", "lnb-fn", step.server ? `${step.server}/${step.function}` : step.function),
    el("span", `lnb-tool-state lnb-tool-${state}`, TOOL_STATE_WORDS[state]));
  const args = el("div");
  args.innerHTML = step.arguments;
  const result = el("div");
  result.innerHTML = step.result;
  box.append(summary, el("div", "lnb-tool-label", "arguments"), args,
    el("div", "lnb-tool-label", "result"), result);
  if (typeof step.insert === "string") { // a proposed cell: open, to be read and taken
    box.open = true;
    const insert = el("button", "lnb-insert", inserted.get(step.id) || "Insert below");
    insert.type = "button";
    insert.title = "Put this code in a new cell below the turn's cell (it is not run)";
    insert.disabled = inserted.has(step.id);
    insert.addEventListener("click", async () => {
      insert.disabled = true;
      let done;
      try {
        done = await insertBelow(model, step.insert);
      } catch (error) {
        done = "could not insert: select the code above to copy it";
      }
      inserted.set(step.id, done);
      insert.textContent = done;
    });
    box.append(insert);
  }
  return box;
}

// The words a screen reader hears for a call waiting for approval.
function callName(ask) {
  return ask.server ? `call to ${ask.tool} from ${ask.server}` : `call to ${ask.tool}`;
}

function drawAsk(ask, model) {
  // a tool call waiting for approval (approve="ask"): Approve / Deny / always for this tool
  const box = el("div", "lnb-ask");
  box.dataset.id = ask.id;
  box.tabIndex = -1; // takes the focus when it appears; Tab then reaches its buttons
  box.setAttribute("role", "group");
  box.setAttribute("aria-label", `Approval of the ${callName(ask)}`);
  const head = el("div", "lnb-ask-head");
  const where = ask.server ? `${ask.server}/${ask.tool}` : ask.tool;
  head.append(el("span", "lnb-ask-question", "Approve this call?"), el("code", "lnb-fn", where));
  const args = el("div", "lnb-ask-args");
  args.innerHTML = ask.code_html || ask.arguments; // kernel-made: escaped, then highlighted
  const flags = el("ul", "lnb-ask-flags");
  flags.setAttribute("aria-label", "Risk flags");
  // laid out here, not in the stylesheet: saved notebooks carry the stylesheet they ran with
  Object.assign(flags.style, { listStyle: "none", display: "flex", flexWrap: "wrap", gap: "4px",
    margin: "4px 0", padding: "0" });
  for (const f of ask.flags || []) {
    const chip = el("li", "lnb-ask-flag", `⚠ ${f.label}`);
    chip.dataset.flag = f.flag;
    Object.assign(chip.style, { border: "1px solid var(--lnb-danger)", borderRadius: "3px",
      padding: "0 4px" });
    flags.append(chip);
  }
  flags.hidden = !(ask.flags || []).length;
  const buttons = el("div", "lnb-ask-buttons");
  const names = {
    approve: `Approve ${callName(ask)}`,
    deny: `Deny ${callName(ask)}`,
    always: `Approve for this tool from now on, every ${callName(ask)}`,
  };
  names.turn = `Approve every ${callName(ask)} for the rest of this turn`;
  // a coding agent's permission request (ACP) offers its own options, one button each
  const choices = ask.options && ask.options.length
    ? ask.options.map((o) => [`option:${o.id}`, o.name, `${o.name}: ${callName(ask)}`, o.kind])
    : [["approve", "Approve"], ["deny", "Deny"], ["turn", "Approve for this turn"],
      ["always", "Approve for this tool from now on"]]
      .map(([d, label]) => [d, label, names[d], d]);
  for (const [decision, label, name, kind] of choices) {
    const button = el("button", `lnb-ask-${kind.replaceAll("_", "-")}`, label);
    button.type = "button";
    button.dataset.decision = decision;
    button.setAttribute("aria-label", name);
    button.addEventListener("click", () => {
      box.focus({ preventScroll: true }); // a disabled button would drop the focus
      for (const b of buttons.children) b.disabled = true;
      model.send({ type: "approval", id: ask.id, decision });
    });
    buttons.append(button);
  }
  const parts = [head, args, flags, buttons];
  if (ask.edit) parts.push(editor(ask, model, buttons));
  box.append(...parts);
  return box;
}

function editor(ask, model, buttons) {
  // Edit, then run: the person's version of the code runs instead (both are recorded)
  const edit = el("button", "lnb-ask-edit", "Edit");
  edit.type = "button";
  edit.setAttribute("aria-label", `Edit the code of the ${callName(ask)}, then run it`);
  const area = el("textarea", "lnb-ask-code");
  area.value = ask.code || "";
  area.rows = Math.min(16, Math.max(3, area.value.split("\n").length + 1));
  area.setAttribute("aria-label", "The code to run");
  Object.assign(area.style, { width: "100%", boxSizing: "border-box",
    fontFamily: "var(--jp-code-font-family, monospace)" });
  const run = el("button", "lnb-ask-run", "Run edited code");
  run.type = "button";
  const pane = el("div", "lnb-ask-editor");
  pane.append(area, run);
  pane.hidden = true;
  edit.addEventListener("click", () => {
    pane.hidden = false;
    area.focus();
  });
  run.addEventListener("click", () => {
    for (const b of [...buttons.children, run, edit]) b.disabled = true;
    model.send({ type: "approval", id: ask.id, decision: "edit", code: area.value });
  });
  buttons.append(edit);
  return pane;
}

// Where a new ask may take the focus from: not from a text field outside the turn (someone
// typing in another cell keeps their place; the ask is announced all the same).
function typingElsewhere(box) {
  const active = document.activeElement;
  if (!active || box.contains(active)) return false;
  return active.isContentEditable || active.matches("textarea, input, select") ||
    Boolean(active.closest(".cm-editor"));
}

function render({ model, el: root }) {
  const box = el("div", "lnb-turn");
  const head = el("div", "lnb-turn-head");
  const label = el("span", "lnb-turn-label");
  const status = el("span", "lnb-turn-status");
  const clock = el("span", "lnb-turn-clock");
  const tokens = el("span", "lnb-turn-tokens");
  const stop = el("button", "lnb-stop");
  stop.type = "button";
  stop.append(icon("■"), "Stop");
  stop.title = STOP_TITLE;
  stop.setAttribute("aria-keyshortcuts", "Escape");
  head.append(label, status, clock, tokens, stop);
  const note = el("div", "lnb-turn-note");
  const steps = el("div", "lnb-steps");
  const asks = el("div", "lnb-asks");
  const budget = el("div", "lnb-budget");
  budget.setAttribute("role", "group");
  budget.setAttribute("aria-label", "budget reached");
  const budgetText = el("p", "lnb-budget-text");
  const raise = el("button", "lnb-raise");
  raise.type = "button";
  raise.addEventListener("click", () => {
    box.focus({ preventScroll: true }); // a disabled button would drop the focus
    raise.disabled = true;
    model.send({ type: "raise_budget" });
  });
  budget.append(budgetText, raise);
  const footer = el("div", "lnb-turn-footer");
  const text = el("div", "lnb-turn-text");
  text.setAttribute("aria-live", "polite");
  text.setAttribute("aria-label", "answer being written");
  const live = el("div", "lnb-sr-only lnb-live");
  live.setAttribute("role", "status");
  live.setAttribute("aria-live", "polite");
  live.setAttribute("aria-atomic", "true");
  const attached = el("div", "lnb-attachments");
  attached.setAttribute("role", "list");
  attached.setAttribute("aria-label", "attachments");
  const thinking = thinkingSection((words) => { live.textContent = words; });
  box.append(head, note, attached, steps, asks, thinking.box, text, budget, footer, live);
  box.tabIndex = -1;
  box.setAttribute("role", "group");
  root.append(box);

  function requestStop() {
    if (!model.get("running") || !model.get("stoppable")) return false;
    if (document.activeElement === stop) box.focus({ preventScroll: true }); // Stop goes away
    stop.disabled = true;
    model.send({ type: "stop" });
    // The model's code holds the kernel's thread, so the message waits for it to end: the
    // interrupt ends the code now, and the kernel then reads the message (sent first).
    const kernel = model.get("code_running") ? kernelOf(model) : null;
    if (kernel) kernel.interrupt().catch(() => {});
    return true;
  }
  stop.addEventListener("click", requestStop);
  // Esc, from anywhere in the turn; JupyterLab's own Esc binding is not needed in here.
  box.setAttribute("data-lm-suppress-shortcuts", "true");
  box.addEventListener("keydown", (event) => {
    if (event.key !== "Escape") return;
    if (requestStop()) {
      event.preventDefault();
      event.stopPropagation();
    }
  });

  let timer = null;
  let wasRunning = model.get("running");
  function tick() {
    const seconds = model.get("running")
      ? (Date.now() - model.get("started")) / 1000
      : model.get("elapsed");
    clock.textContent = seconds > 0 ? ` · ${seconds.toFixed(1)} s` : "";
    thinking.tick();
  }
  function drawHead() {
    label.textContent = model.get("head");
    box.setAttribute("aria-label", `turn ${model.get("head")}`.trim());
    status.textContent = model.get("status") ? ` · ${model.get("status")}` : "";
    const n = model.get("tokens");
    tokens.textContent = n ? ` · ${n} tokens` : "";
    note.textContent = model.get("note");
    note.hidden = !model.get("note");
    if (!model.get("running") && box.contains(document.activeElement) &&
        document.activeElement === stop) box.focus({ preventScroll: true });
    stop.hidden = !model.get("running");
    stop.disabled = !model.get("stoppable");
    box.classList.toggle("lnb-running", model.get("running"));
    box.classList.toggle("lnb-code-running", model.get("code_running"));
    stop.title = model.get("code_running")
      ? "Stop this turn and the code it runs in the kernel (what it printed is kept); Esc does the same"
      : STOP_TITLE;
    if (model.get("running") && timer === null) timer = setInterval(tick, 100);
    if (!model.get("running") && timer !== null) {
      clearInterval(timer);
      timer = null;
    }
    tick();
    text.setAttribute("aria-busy", String(model.get("running")));
    if (wasRunning && !model.get("running")) {
      const parts = [model.get("status")];
      if (model.get("elapsed") > 0) parts.push(`${model.get("elapsed").toFixed(1)} s`);
      if (model.get("tokens")) parts.push(`${model.get("tokens")} tokens`);
      const offer = model.get("budget");
      const then = offer.action ? `. A button below offers: ${offer.action}.` : "";
      live.textContent = `${model.get("head") || "turn"}: ${parts.join(", ")}${then}`;
    }
    wasRunning = model.get("running");
  }
  function drawFooter() {
    footer.textContent = model.get("footer");
    footer.hidden = !model.get("footer");
  }
  function drawBudget() {
    const offer = model.get("budget");
    const hadFocus = box.contains(document.activeElement);
    budgetText.textContent = offer.text || "";
    raise.textContent = offer.action || "";
    raise.disabled = !offer.action;
    budget.hidden = !offer.action;
    if (offer.action && hadFocus) raise.focus({ preventScroll: true });
    else if (!offer.action && document.activeElement === raise) box.focus({ preventScroll: true });
  }
  const inserted = new Map(); // step id -> what its "Insert below" did
  function drawSteps() {
    steps.replaceChildren(...model.get("steps").map((step) => drawStep(step, model, inserted)));
  }
  // A new ask takes the focus and is announced once; once answered, the focus goes to the
  // next ask, else back where it was before the first one came (else the turn).
  let shownAsks = new Set(model.get("asks").map((ask) => ask.id));
  let focusBefore = null;
  // Someone can see this turn's calls, so they may be answered: said once, and only when a
  // call waits (a message to the kernel while a cell awaits can cost that cell its reply).
  let saidShown = false;
  function drawAsks() {
    if (!saidShown && model.get("asks").length) {
      saidShown = true;
      model.send({ type: "shown" });
    }
    const active = document.activeElement;
    const inAsks = asks.contains(active);
    const keep = inAsks ? [active.closest(".lnb-ask")?.dataset.id, active.dataset.decision] : null;
    const list = model.get("asks");
    const fresh = list.filter((ask) => !shownAsks.has(ask.id));
    shownAsks = new Set(list.map((ask) => ask.id));
    if (fresh.length && !inAsks && !focusBefore) focusBefore = active;
    asks.replaceChildren(...list.map((ask) => drawAsk(ask, model)));
    if (fresh.length) {
      live.textContent = fresh.map((ask) => `Approval needed: ${callName(ask)}`).join(". ");
      if (!typingElsewhere(box)) asks.querySelector(`[data-id="${fresh[0].id}"]`).focus();
      return;
    }
    if (!inAsks) return;
    const same = keep && asks.querySelector(`[data-id="${keep[0]}"]`);
    if (same) {
      (same.querySelector(`[data-decision="${keep[1]}"]`) || same).focus({ preventScroll: true });
    } else if (asks.firstElementChild) {
      asks.firstElementChild.focus({ preventScroll: true });
    } else {
      const back = focusBefore && focusBefore.isConnected && focusBefore !== document.body
        ? focusBefore : box;
      back.focus({ preventScroll: true });
    }
    if (!asks.firstElementChild) focusBefore = null;
  }
  function drawText() {
    text.innerHTML = model.get("text_html");
    text.hidden = !model.get("text_html");
  }
  function drawThinking() {
    thinking.update(model.get("thinking_state"));
  }
  function drawAttached() {
    const items = model.get("attachments");
    attached.replaceChildren(...attachmentCells(items, model.get("media")));
    attached.hidden = !items.length;
  }
  model.on("change:attachments", drawAttached);
  model.on("change:media", drawAttached);
  drawAttached();
  const names = ["head", "status", "running", "stoppable", "tokens", "elapsed", "note", "code_running"];
  for (const name of names) model.on(`change:${name}`, drawHead);
  model.on("change:steps", drawSteps);
  model.on("change:asks", drawAsks);
  model.on("change:text_html", drawText);
  model.on("change:thinking_state", drawThinking);
  model.on("change:footer", drawFooter);
  model.on("change:budget", drawBudget);
  drawThinking();
  drawHead();
  drawSteps();
  drawAsks();
  drawText();
  drawFooter();
  drawBudget();
  return () => {
    if (timer !== null) clearInterval(timer);
    for (const name of names) model.off(`change:${name}`, drawHead);
    model.off("change:steps", drawSteps);
    model.off("change:asks", drawAsks);
    model.off("change:text_html", drawText);
    model.off("change:thinking_state", drawThinking);
    model.off("change:footer", drawFooter);
    model.off("change:budget", drawBudget);
    model.off("change:attachments", drawAttached);
    model.off("change:media", drawAttached);
  };
}

export default { render };
