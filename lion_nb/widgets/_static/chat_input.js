// Chat's message box: a multi-line text area. Enter sends, Shift+Enter starts a new line (as
// in every chat app); Esc, anywhere in the chat, stops the running answer.
// While a run is in progress the box is read-only, not disabled: a disabled box would drop
// the keyboard focus, and Esc would then have nowhere to be pressed.
// "Attach a file" opens the browser's file picker (a native file input, hidden: the button
// is what the keyboard reaches); the picked file's bytes go to the kernel, which lists it as
// a chip with a "remove" button until the next message takes it.

function render({ model, el: root }) {
  const box = document.createElement("div");
  box.className = "lnb-chat-input";
  // JupyterLab's shortcuts stay out of the whole input: in command mode its Enter binding
  // would take the key from a focused button ("Attach a file", a chip's "remove").
  box.setAttribute("data-lm-suppress-shortcuts", "true");
  const area = document.createElement("textarea");
  area.rows = 1;
  area.className = "lnb-chat-box";
  area.setAttribute("aria-keyshortcuts", "Enter Shift+Enter Escape");
  // JupyterLab's shortcuts (Shift+Enter runs the cell) stay out of the box.
  area.setAttribute("data-lm-suppress-shortcuts", "true");
  const picker = document.createElement("input");
  picker.type = "file";
  picker.hidden = true;
  picker.tabIndex = -1;
  picker.className = "lnb-attach-input";
  const attach = document.createElement("button");
  attach.type = "button";
  attach.className = "lnb-attach";
  attach.textContent = "Attach a file";
  attach.title = "attach a file (PDF, image or text) to the next message";
  attach.addEventListener("click", () => picker.click());
  picker.addEventListener("change", async () => {
    for (const file of Array.from(picker.files || [])) {
      const data = await file.arrayBuffer();
      model.send({ event: "attach", name: file.name, type: file.type }, undefined, [data]);
    }
    picker.value = "";
  });
  const chips = document.createElement("div");
  chips.className = "lnb-attachments lnb-attached-files";
  chips.setAttribute("role", "list");
  chips.setAttribute("aria-label", "files attached to the next message");
  const column = document.createElement("div");
  column.className = "lnb-chat-column";
  column.append(chips, area);
  box.append(attach, picker, column);
  root.append(box);

  function drawChips() {
    const items = model.get("attached") || [];
    chips.hidden = !items.length;
    chips.replaceChildren(...items.map((item, index) => {
      const cell = document.createElement("div");
      cell.setAttribute("role", "listitem");
      const chip = document.createElement("span");
      chip.className = "lnb-chip";
      const name = document.createElement("span");
      name.className = "lnb-chip-name";
      name.textContent = item.name;
      const label = document.createElement("span");
      label.className = "lnb-chip-label";
      label.textContent = item.label;
      const remove = document.createElement("button");
      remove.type = "button";
      remove.textContent = "remove";
      remove.setAttribute("aria-label", `remove ${item.name}`);
      remove.addEventListener("click", () => {
        model.send({ event: "detach", index });
        attach.focus();
      });
      chip.append(name, chipSeparator(), label, remove);
      cell.append(chip);
      return cell;
    }));
  }

  // The box grows with its text -- and, while empty, with its placeholder, which would
  // otherwise be cut to its first line wherever the box is narrow.
  function fit() {
    area.style.height = "auto";
    let needed = area.scrollHeight;
    if (!area.value && area.placeholder) {
      area.value = area.placeholder;
      needed = area.scrollHeight;
      area.value = "";
    }
    area.style.height = `${needed + 2}px`;
  }
  let width = 0;
  new ResizeObserver(() => {
    const now = area.getBoundingClientRect().width;
    if (now && now !== width) {
      width = now;
      fit();
    }
  }).observe(area);
  // Values this box sent: the kernel echoes each one back, and an echo arriving after more
  // was typed (or after the message went) must not put the older text back.
  let sent = new Set();
  function draw() {
    const value = model.get("value");
    if (area.value !== value && !sent.has(value)) {
      area.value = value;
      fit();
    }
    if (area.placeholder !== model.get("placeholder")) {
      area.placeholder = model.get("placeholder");
      fit();
    }
    area.setAttribute("aria-label", model.get("label"));
    const busy = model.get("disabled");
    attach.disabled = busy;
    area.readOnly = busy;
    area.setAttribute("aria-disabled", String(busy));
  }
  function sync() {
    sent.add(area.value);
    model.set("value", area.value);
    model.save_changes();
  }
  function stop(event) {
    if (!model.get("disabled")) return; // nothing runs: Esc is not ours
    event.preventDefault();
    event.stopPropagation();
    model.send({ event: "stop" });
    // Stop is disabled once the run ends: keep the focus in the chat, on the box.
    const chat = root.closest(".lnb-chat");
    if (chat && document.activeElement !== area && chat.querySelector(".lnb-chat-controls")
      ?.contains(document.activeElement)) area.focus();
  }

  area.addEventListener("input", () => {
    fit();
    sync();
  });
  area.addEventListener("keydown", (event) => {
    if (event.key === "Escape") return stop(event);
    if (event.key !== "Enter" || event.isComposing) return;
    if (event.altKey || event.ctrlKey || event.metaKey) return;
    event.preventDefault();
    event.stopPropagation();
    if (event.shiftKey) {
      // The line break is made here: in JupyterLab the browser's own one does not arrive
      // (something outside the widget cancels it).
      if (area.readOnly) return;
      area.setRangeText("\n", area.selectionStart, area.selectionEnd, "end");
      fit();
      sync();
      return;
    }
    if (model.get("disabled")) return;
    const text = area.value;
    sync();
    // The message carries its text: ipywidgets holds back value updates while earlier ones
    // are unanswered, and a custom message is never held back, so it could overtake them.
    // From here the text sent is the kernel's to give back (after a stop); the values typed
    // on the way to it stay ours, so their late echoes are ignored.
    sent = new Set([...sent].filter((value) => value !== text));
    model.send({ event: "submit", value: text });
  });
  // Esc from any other part of the chat (the view, Stop, the picker): on `window`, in the
  // capture phase, so it is seen before JupyterLab's own key handling.
  const onKey = (event) => {
    if (event.key !== "Escape" || event.target === area) return;
    const chat = root.closest(".lnb-chat");
    if (chat && chat.contains(event.target)) stop(event);
  };
  window.addEventListener("keydown", onKey, true);
  const onMessage = (content) => {
    if (content && content.do === "focus") area.focus();
    else if (content && content.do === "blur") area.blur();
  };
  const names = ["value", "placeholder", "label", "disabled"];
  for (const name of names) model.on(`change:${name}`, draw);
  model.on("change:attached", drawChips);
  model.on("msg:custom", onMessage);
  draw();
  drawChips();
  return () => {
    window.removeEventListener("keydown", onKey, true);
    for (const name of names) model.off(`change:${name}`, draw);
    model.off("change:attached", drawChips);
    model.off("msg:custom", onMessage);
  };
}

export default { render };
