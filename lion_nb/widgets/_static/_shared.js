// What the widgets' front ends draw alike, defined here once. The kernel puts this file before
// every widget's own module (`_base.esm`), so each widget still ships as one self-contained ES
// module; a widget's own file defines none of these again (tests/widgets/test_front_end.py).

function el(tag, cls, text) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (text !== undefined) node.textContent = text;
  return node;
}

// A glyph beside a button's word: seen, not read (the button's name is the word alone).
function icon(glyph) {
  const node = el("span", "lnb-icon", glyph);
  node.setAttribute("aria-hidden", "true");
  return node;
}

// An id for aria-controls / aria-labelledby, unique in the page (per widget module).
let lnbUid = 0;
function uniqueId(prefix) {
  lnbUid += 1;
  return `${prefix}-${lnbUid}`;
}

function plural(n, noun) {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

// A tool call's state (`state`, set by the kernel) and the words shown for it. A denied call
// is a decision, not a failure: it reads "denied", in the neutral style.
const TOOL_STATE_WORDS = { pending: "running…", ok: "done", error: "error", denied: "denied" };
function toolState(entry) {
  if (entry.state in TOOL_STATE_WORDS) return entry.state;
  return entry.pending ? "pending" : entry.is_error ? "error" : "ok";
}

// A message's images and files, one list item each. An image is drawn only from a
// `data:image/...` URL in the view's `media` map (by content hash; nothing is ever fetched),
// with its description as alt text; a file is a chip: its name, then its kind and pages or size.
function attachmentCells(items, media) {
  const cells = [];
  for (const item of items || []) {
    const cell = el("div", "lnb-attachment");
    cell.setAttribute("role", "listitem");
    const src = item.type === "image" ? (media || {})[item.ref] : undefined;
    if (typeof src === "string" && /^data:image\/(png|jpeg|gif|webp)[;,]/.test(src)) {
      const img = el("img", "lnb-attached-image");
      img.alt = item.alt;
      img.title = item.alt;
      img.src = src;
      cell.append(img);
    } else {
      const chip = el("span", "lnb-chip");
      const name = item.type === "image" ? "image" : item.name;
      const label = item.type === "image" ? item.alt : item.label;
      chip.append(el("span", "lnb-chip-name", name), chipSeparator(),
        el("span", "lnb-chip-label", label));
      chip.title = `${name}: ${label}`;
      cell.append(chip);
    }
    cells.push(cell);
  }
  return cells;
}

// Between a chip's name and its label: read (and copied) as "name · label", not "namelabel".
function chipSeparator() {
  return el("span", "lnb-chip-sep", " · ");
}

// How long a model thought, in words: "3.2 s" under ten seconds, "14 s" from there.
function secondsText(value) {
  return value < 10 ? `${value.toFixed(1)} s` : `${Math.round(value)} s`;
}

// A model's thinking: a real button (`aria-expanded`, `aria-controls`) that shows or hides
// its region. `state` is the kernel's (`_thinking.LiveThinking.state`, or a recorded answer's
// `{html, seconds}`); its `html` was sanitized in the kernel. While the model thinks the
// region is open and the button counts time and tokens; once the answer starts it folds away
// (the reader can open it again). A screen reader hears "Thinking…" when it starts and
// "Thought for N s" when it ends, each once, through `announce`, never each fragment: the
// region is not live. `onToggle(open)` tells the caller, which keeps the reader's choice
// across redraws.
function thinkingSection(announce, onToggle) {
  const box = el("div", "lnb-thinking");
  const toggle = el("button", "lnb-thinking-toggle");
  toggle.type = "button";
  toggle.dataset.control = "thinking";
  const mark = icon("▸");
  const label = el("span", "lnb-thinking-label", "Thinking");
  toggle.append(mark, label);
  const region = el("div", "lnb-thinking-text");
  region.id = uniqueId("lnb-thinking");
  region.setAttribute("role", "region");
  region.setAttribute("aria-label", "thinking");
  toggle.setAttribute("aria-controls", region.id);
  const note = el("p", "lnb-thinking-note");
  const body = el("div", "lnb-thinking-body");
  region.append(note, body);
  box.append(toggle, region);
  let state = {};
  let wasRunning = false;
  const section = {
    box,
    toggle,
    expanded: false,
    expand(open) {
      section.expanded = open;
      region.hidden = !open;
      toggle.setAttribute("aria-expanded", String(open));
      mark.textContent = open ? "▾" : "▸";
    },
    tick() {
      if (!state.running) return;
      const parts = ["Thinking…", secondsText(Math.max(0, (Date.now() - state.started) / 1000))];
      if (state.tokens) parts.push(`~${state.tokens.toLocaleString("en-US")} tokens`);
      label.textContent = parts.join(" · ");
    },
    update(next, open) {
      state = next || {};
      box.hidden = !state.html && !state.running;
      if (box.hidden) {
        wasRunning = false;
        return;
      }
      if (body.innerHTML !== state.html) body.innerHTML = state.html || "";
      note.textContent = state.skipped
        ? `… ${state.skipped.toLocaleString("en-US")} earlier characters` : "";
      note.hidden = !state.skipped;
      if (state.running) {
        if (!wasRunning) {
          section.expand(true);
          if (announce) announce("Thinking…");
        }
        section.tick();
      } else {
        const took = typeof state.seconds === "number" ? `Thought for ${secondsText(state.seconds)}` : "Thought";
        label.textContent = took;
        if (wasRunning) {
          section.expand(false); // the answer started: fold the thinking away
          if (announce) announce(took);
        } else if (open !== undefined) {
          section.expand(open);
        }
      }
      wasRunning = Boolean(state.running);
    },
  };
  toggle.addEventListener("click", () => {
    section.expand(!section.expanded);
    if (onToggle) onToggle(section.expanded);
  });
  section.expand(false);
  return section;
}
