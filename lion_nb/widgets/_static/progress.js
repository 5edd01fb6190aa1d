// BatchProgress's front end: a batch run's bar, counts, failures, Stop and Retry failed.
// Every string is set as text; nothing here is HTML.

function render({ model, el: root }) {
  const box = el("div", "lnb-progress");
  const head = el("div", "lnb-progress-head");
  const title = el("span", "lnb-progress-title");
  const state = el("span", "lnb-progress-state");
  const stop = el("button", "lnb-stop");
  stop.append(icon("■"), "Stop");
  stop.title = "Start nothing new and cancel the calls in flight";
  const retry = el("button", "lnb-progress-retry");
  retry.append(icon("↻"), "Retry failed");
  retry.title = "Run the failed and stopped items again";
  const actions = el("span", "lnb-progress-actions");
  actions.append(retry, stop);
  head.append(title, state, actions);
  const bar = el("div", "lnb-progress-bar");
  bar.setAttribute("role", "progressbar");
  bar.setAttribute("aria-valuemin", "0");
  const doneBar = el("div", "lnb-progress-done");
  const failedBar = el("div", "lnb-progress-failed");
  const flightBar = el("div", "lnb-progress-flight");
  bar.append(doneBar, failedBar, flightBar);
  const stats = el("div", "lnb-progress-stats");
  const failures = el("details", "lnb-progress-failures");
  const summary = el("summary");
  const list = el("ul");
  failures.append(summary, list);
  box.append(head, bar, stats, failures);
  root.append(box);

  stop.addEventListener("click", () => {
    stop.disabled = true;
    model.send({ type: "stop" });
  });
  retry.addEventListener("click", () => {
    retry.disabled = true;
    model.send({ type: "retry" });
  });

  function draw() {
    const total = Math.max(model.get("total"), 1);
    const pct = (n) => `${(100 * n) / total}%`;
    title.textContent = model.get("title");
    state.textContent = ` · ${model.get("via")} · ${model.get("state")}`;
    bar.setAttribute("aria-valuemax", String(model.get("total")));
    bar.setAttribute("aria-valuenow", String(model.get("done") + model.get("failed")));
    bar.setAttribute("aria-label", `${model.get("title") || "batch"} progress`);
    doneBar.style.width = pct(model.get("done"));
    failedBar.style.width = pct(model.get("failed"));
    flightBar.style.width = pct(model.get("in_flight"));
    const parts = [`${model.get("done")}/${model.get("total")} done`];
    if (model.get("failed")) parts.push(`${model.get("failed")} failed`);
    if (model.get("stopped")) parts.push(`${model.get("stopped")} stopped`);
    if (model.get("in_flight")) parts.push(`${model.get("in_flight")} in flight`);
    if (model.get("tokens")) parts.push(`${model.get("tokens").toLocaleString()} tokens`);
    if (model.get("cost")) parts.push(`≈ ${model.get("cost")}`);
    if (model.get("eta")) parts.push(`${model.get("eta")} left`);
    stats.textContent = parts.join(" · ");
    stop.hidden = !model.get("stoppable");
    stop.disabled = !model.get("stoppable");
    retry.hidden = !model.get("retryable");
    retry.disabled = !model.get("retryable");
    const shown = model.get("failures");
    failures.hidden = shown.length === 0;
    summary.textContent = `${model.get("failed")} failed`;
    list.replaceChildren(
      ...shown.map((f) => {
        const item = el("li");
        item.append(el("span", "lnb-progress-label", `[${f.index}] ${f.label}: `),
          el("code", "", f.error));
        return item;
      }),
    );
  }
  const names = ["title", "via", "state", "total", "done", "failed", "stopped", "in_flight",
    "tokens", "cost", "eta", "failures", "stoppable", "retryable"];
  for (const name of names) model.on(`change:${name}`, draw);
  draw();
  return () => {
    for (const name of names) model.off(`change:${name}`, draw);
  };
}

export default { render };
