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
