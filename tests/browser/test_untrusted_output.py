"""Model output is untrusted: rendered in a real browser, nothing it contains may run."""

from __future__ import annotations

import pytest

from lion_nb.notebook.cell.output_formats import markdown_html, mime_bundle

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


def test_remote_images_in_model_output_are_never_fetched(page):
    """An image URL is a way to send data out; rendered output must not load one."""
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    hits: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self):
            hits.append(self.path)
            self.send_response(200)
            self.send_header("Content-Type", "image/gif")
            self.end_headers()
            self.wfile.write(b"GIF89a")

        def log_message(self, *args):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    try:
        text = (
            f"![chart]({base}/leak?secret=1)\n\n"
            f'<img src="{base}/leak2">\n\n'
            f'<img src="//127.0.0.1:{server.server_address[1]}/leak3">'
        )
        page.set_content(f"<div id='out'>{markdown_html(text)}</div>")
        page.wait_for_timeout(300)
        assert hits == []
        assert page.query_selector_all("#out img") == []
        assert f"{base}/leak?secret=1" in page.inner_html("#out")  # offered as a link instead
    finally:
        server.shutdown()
