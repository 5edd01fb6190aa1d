"""Model output is untrusted: rendered in a real browser, nothing it contains may run."""

from __future__ import annotations

import pytest

from lion_nb.notebook.render import markdown_html, mime_bundle

pytestmark = pytest.mark.browser

ATTACKS = [
    "<script>window.pwned = 'script'</script>",
    "<img src=x onerror=\"window.pwned='img'\">",
    "[click](javascript:window.pwned='link')",
    '<a href="javascript:window.pwned=1">x</a>',
    "<iframe srcdoc=\"<script>parent.pwned='iframe'</script>\"></iframe>",
    "<svg onload=\"window.pwned='svg'\"></svg>",
    "<details open ontoggle=\"window.pwned='details'\"><summary>x</summary></details>",
    "![x](javascript:window.pwned='image')",
    '<style>body{background:url("javascript:window.pwned=1")}</style>',
]


def _render_and_probe(page, html: str) -> dict:
    page.set_content(f"<html><body><div id='out'>{html}</div></body></html>")
    page.wait_for_timeout(150)
    for link in page.query_selector_all("#out a"):
        link.click(no_wait_after=True)
    page.wait_for_timeout(150)
    return page.evaluate(
        "() => ({pwned: window.pwned ?? null,"
        " scripts: document.querySelectorAll('#out script, #out iframe, #out svg').length})"
    )


@pytest.mark.parametrize("attack", ATTACKS)
def test_markdown_output_cannot_run_script(page, attack):
    html = markdown_html(f"Here is my answer.\n\n{attack}\n\n**bold** stays bold.")
    probe = _render_and_probe(page, html)
    assert probe == {"pwned": None, "scripts": 0}
    assert page.inner_text("#out strong") == "bold"


@pytest.mark.parametrize("attack", ATTACKS)
def test_html_output_format_is_sanitized(page, attack):
    bundle = mime_bundle(f"<p>fine</p>{attack}", "html")
    probe = _render_and_probe(page, bundle["text/html"])
    assert probe == {"pwned": None, "scripts": 0}
    assert "fine" in page.inner_text("#out")


def test_harmless_markdown_renders_as_formatting(page):
    html = markdown_html("# Title\n\n- one\n- two\n\n`code` and [a link](https://example.org)")
    page.set_content(f"<div id='out'>{html}</div>")
    assert page.inner_text("#out h1") == "Title"
    assert page.eval_on_selector_all("#out li", "els => els.map(e => e.textContent)") == [
        "one",
        "two",
    ]
    assert page.get_attribute("#out a", "href") == "https://example.org"
