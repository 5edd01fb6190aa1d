// The widgets' stylesheet travels in this module (`LNB_CSS`, put first by the kernel), never in
// a widget's saved state: a notebook saved by an older lion_nb carries that version's styles,
// and they must not override the running version's. One <style> element holds them, marked
// with its version; a module of an older version leaves a newer one in place. Style elements
// that anywidget made from a widget's `_css` (older lion_nb versions kept the stylesheet
// there, under the widget's class name) are switched off, now and whenever one is added.

(function lnbClaimStyles() {
  const mark = "data-lnb-stylesheet";
  const rank = (version) => (version || "").split("+")[0].split(".").map((n) => parseInt(n, 10) || 0);
  const older = (a, b) => {
    const [x, y] = [rank(a), rank(b)];
    for (let i = 0; i < Math.max(x.length, y.length); i++) {
      if ((x[i] || 0) !== (y[i] || 0)) return (x[i] || 0) < (y[i] || 0);
    }
    return false;
  };
  let style = document.head.querySelector(`style[${mark}]`);
  if (!style) {
    style = document.createElement("style");
    document.head.append(style);
  }
  if (!older(LNB_CSS_VERSION, style.getAttribute(mark))) {
    style.setAttribute(mark, LNB_CSS_VERSION);
    if (style.textContent !== LNB_CSS) style.textContent = LNB_CSS;
  }
  const stale = () => {
    for (const node of document.head.querySelectorAll('style[id^="lion_nb.widgets."]')) {
      if (node.media !== "not all") node.media = "not all";
    }
  };
  stale();
  if (!window.lnbStaleStyles) {
    window.lnbStaleStyles = new MutationObserver(stale);
    window.lnbStaleStyles.observe(document.head, { childList: true });
  }
})();
