"""Accessibility measures taken in the page: text contrast, accessible names, axe-core, theme.

- **Contrast** (WCAG 2.2, 1.4.3): for every visible text node inside a lion_nb widget, the
  computed text colour against the background it is really drawn on -- each ancestor's
  background colour composited from the first opaque one up, the text's own alpha and its
  ancestors' ``opacity`` applied -- with the WCAG relative-luminance formula. Large text
  (24 px, or 18.66 px bold) needs 3:1, the rest 4.5:1; a decorative glyph (``.lnb-icon``,
  hidden from assistive technology) needs the 3:1 of a graphic (1.4.11). Text of a disabled
  control is exempt, as WCAG exempts inactive components. Text only for screen readers
  (``.lnb-sr-only``) is not drawn and is skipped.
- **Names**: each widget's accessibility tree as Playwright's ARIA snapshot gives it (the
  browser's own name computation), searched for controls without a name and for names that
  hold a private-use character (an icon font's glyph).
- **axe-core**, as ``axe-playwright-python`` bundles it, run over the widgets only.
- **Theme**: JupyterLab's theme is switched with its own command, ``apputils:change-theme``.
"""

from __future__ import annotations

import re

# The roots of lion_nb's live widgets.
WIDGETS = (
    ".lnb-view",
    ".lnb-explorer",
    ".lnb-signals",
    ".lnb-turn",
    ".lnb-progress",
    ".lnb-chat",
    ".lnb-evalgrid",
)

_CONTRAST_JS = r"""(selectors) => {
  function parse(text) {
    let m = text.match(/^rgba?\(([^)]*)\)/);
    if (m) {
      const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(Number);
      return [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
    }
    m = text.match(/^color\(srgb ([^)]*)\)/);
    if (m) {
      const p = m[1].split(/[\s\/]+/).filter(Boolean).map(Number);
      return [p[0] * 255, p[1] * 255, p[2] * 255, p.length > 3 ? p[3] : 1];
    }
    throw new Error(`unknown colour ${text}`);
  }
  const over = (top, under) => {
    const a = top[3];
    return [0, 1, 2].map(i => top[i] * a + under[i] * (1 - a)).concat([1]);
  };
  const lum = (c) => {
    const f = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; };
    return 0.2126 * f(c[0]) + 0.7152 * f(c[1]) + 0.0722 * f(c[2]);
  };
  const ratio = (a, b) => {
    const [x, y] = [lum(a), lum(b)];
    return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05);
  };
  function background(node) {
    const layers = [];
    for (let n = node; n && n.nodeType === 1; n = n.parentElement) {
      const c = parse(getComputedStyle(n).backgroundColor);
      if (c[3] > 0) layers.push(c);
      if (c[3] >= 1) break;
    }
    let base = [255, 255, 255, 1];
    if (!layers.length || layers[layers.length - 1][3] < 1) {
      const page = parse(getComputedStyle(document.body).backgroundColor);
      if (page[3] >= 1) base = page;
    } else {
      base = layers.pop();
    }
    for (const layer of layers.reverse()) base = over(layer, base);
    return base;
  }
  function opacity(node) {
    let o = 1;
    for (let n = node; n && n.nodeType === 1; n = n.parentElement) {
      o *= Number(getComputedStyle(n).opacity);
    }
    return o;
  }
  const out = [];
  const roots = new Set(selectors.flatMap(s => [...document.querySelectorAll(s)]));
  for (const root of roots) {
    const walker = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
    for (let t = walker.nextNode(); t; t = walker.nextNode()) {
      const text = t.textContent.trim();
      const node = t.parentElement;
      if (!text || !node) continue;
      if (node.closest('.lnb-sr-only, :disabled, [aria-disabled="true"], option')) continue;
      if (!node.checkVisibility({ visibilityProperty: true, opacityProperty: false })) continue;
      const style = getComputedStyle(node);
      const bg = background(node);
      const colour = parse(style.color);
      colour[3] *= opacity(node);
      const fg = over(colour, bg);
      const size = parseFloat(style.fontSize);
      const bold = Number(style.fontWeight) >= 700;
      const large = size >= 24 || (size >= 18.66 && bold);
      const icon = Boolean(node.closest('.lnb-icon'));
      out.push({
        text: text.slice(0, 40),
        widget: root.className.split(' ').find(c => c.startsWith('lnb-')) || root.className,
        where: node.className || node.tagName.toLowerCase(),
        ratio: Math.round(ratio(fg, bg) * 100) / 100,
        need: icon || large ? 3 : 4.5,
      });
    }
  }
  return out;
}"""

# The focus ring of the focused control: its outline's width, and its colour's contrast with
# the background around the control (the outline is drawn outside it). A tree item draws
# its ring on its row.
_RING_JS = (
    _CONTRAST_JS.split("const out = [];")[0]
    + r"""
  let node = document.activeElement;
  if (!node || !node.closest(selectors.join(','))) return null;
  if (node.getAttribute('role') === 'treeitem') node = node.querySelector(':scope > .lnb-node');
  const style = getComputedStyle(node);
  const width = style.outlineStyle === 'none' ? 0 : parseFloat(style.outlineWidth);
  const around = background(node.parentElement);
  return {
    control: (node.getAttribute('aria-label') || node.textContent || node.tagName).trim().slice(0, 40),
    width, ratio: Math.round(ratio(over(parse(style.outlineColor), around), around) * 100) / 100,
  };
}"""
)

_PRIVATE_USE = re.compile("[\ue000-\uf8ff]")
_CONTROL = re.compile(
    r"^\s*- (button|textbox|searchbox|combobox|listbox|treeitem|checkbox|slider|spinbutton)"
    r"\b(.*)$"
)


def text_contrast(page) -> list[dict]:
    """Every visible text node inside the widgets: text, widget, where, ratio, need."""
    return page.evaluate(_CONTRAST_JS, list(WIDGETS))


def focus_rings(page, start, presses: int = 40) -> list[dict]:
    """Focus ``start`` and press Tab ``presses`` times; the focus ring of each control reached
    inside a widget (control, width in px, contrast with its surroundings)."""
    start.focus()
    rings = []
    for _ in range(presses):
        page.keyboard.press("Tab")
        ring = page.evaluate(_RING_JS, list(WIDGETS))
        if ring is not None:
            rings.append(ring)
    return rings


def unnamed_controls(page) -> tuple[list[str], list[str]]:
    """(controls without an accessible name, names holding a private-use character), from
    the ARIA snapshot of every widget in the page; also returns nothing when none is shown."""
    nameless, glyphs = [], []
    for selector in WIDGETS:
        for widget in page.locator(selector).all():
            for line in widget.aria_snapshot().splitlines():
                found = _CONTROL.match(line)
                if not found:
                    continue
                if not found.group(2).lstrip().startswith('"'):
                    nameless.append(line.strip())
                if _PRIVATE_USE.search(line):
                    glyphs.append(line.strip())
    return nameless, glyphs


def controls_named(page) -> list[str]:
    """The role and name of every control in the widgets' ARIA snapshots."""
    named = []
    for selector in WIDGETS:
        for widget in page.locator(selector).all():
            named += [
                line.strip() for line in widget.aria_snapshot().splitlines() if _CONTROL.match(line)
            ]
    return named


def axe_violations(page, impacts=("serious", "critical")) -> list[dict]:
    """axe-core's violations of at least ``impacts`` inside the widgets: rule, impact, help and
    the offending nodes' targets."""
    from axe_playwright_python.sync_playwright import Axe

    include = [sel for sel in WIDGETS if page.locator(sel).count()]
    results = Axe().run(page, context={"include": include}, options={"resultTypes": ["violations"]})
    found = []
    for violation in results.response["violations"]:
        if violation["impact"] in impacts:
            found.append(
                {
                    "rule": violation["id"],
                    "impact": violation["impact"],
                    "help": violation["help"],
                    "nodes": [n["target"] for n in violation["nodes"]][:5],
                }
            )
    return found


def set_theme(page, name: str) -> None:
    """Switch JupyterLab to the theme ``name`` ("JupyterLab Light", "JupyterLab Dark") and wait
    until the page shows it."""
    page.evaluate(
        "async (theme) => { await window.jupyterapp.commands.execute("
        "'apputils:change-theme', {theme}); }",
        name,
    )
    page.wait_for_function(
        "(theme) => document.body.dataset.jpThemeName === theme", arg=name, timeout=30_000
    )
    page.evaluate("() => new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))")
