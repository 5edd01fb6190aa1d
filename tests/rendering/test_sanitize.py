"""Edge cases of the sanitizer's policy, beyond tests/notebook/cell/test_render.py: where nh3's
options end and the small steps around it begin."""

from __future__ import annotations

from html.parser import HTMLParser

import pytest

from lion_nb.rendering import sanitize_html
from lion_nb.rendering.sanitize import _IMG_TAG, _finish_image

REL = 'rel="noopener noreferrer nofollow"'


def elements(html: str) -> list[tuple[str, dict[str, str | None]]]:
    """Every start tag in ``html`` with its attributes, as a browser-like parser reads it."""
    found: list[tuple[str, dict[str, str | None]]] = []

    class Collect(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, dict(attrs)))

    parser = Collect()
    parser.feed(html)
    parser.close()
    return found


@pytest.mark.parametrize(
    "link",
    [
        '<a href="data:text/html,<script>alert(1)</script>">x</a>',
        '<a href=" DATA:text/html;base64,PHNjcmlwdD4=">x</a>',
        '<a href="\x01data:text/html,x">x</a>',  # browsers skip leading control characters
        '<a href="data:image/png;base64,iVBO">x</a>',  # an inline image is not a link target
    ],
)
def test_data_urls_are_never_link_targets(link):
    """``data`` is on nh3's scheme list only so that inline images survive it."""
    assert sanitize_html(link) == f"<a {REL}>x</a>"


def test_src_is_kept_only_as_an_inline_image_on_img():
    assert sanitize_html('<span src="data:image/png;base64,AA">x</span>') == (
        '<span src="data:image/png;base64,AA">x</span>'  # harmless: a span loads nothing
    )
    assert sanitize_html('<span src="https://evil.example/t.png">x</span>') == "<span>x</span>"
    assert sanitize_html('<p src="data:text/html,x">x</p>') == "<p>x</p>"


def test_an_inline_image_keeps_only_allowed_attributes():
    clean = sanitize_html(
        '<img src="DATA:IMAGE/JPEG;base64,AA" onerror=alert(1) class="language-py jp-X"'
        ' title="t" width=1 style="position:fixed">'
    )
    assert elements(clean) == [
        ("img", {"src": "DATA:IMAGE/JPEG;base64,AA", "class": "language-py", "title": "t"})
    ]


def test_a_remote_image_url_cannot_break_out_of_its_link():
    clean = sanitize_html(
        "<img src='https://evil.example/a.png?\"onmouseover=alert(1)' alt='<b>x</b>'>"
    )
    assert elements(clean) == [
        (
            "a",
            {
                "href": 'https://evil.example/a.png?"onmouseover=alert(1)',
                "rel": "noopener noreferrer nofollow",
            },
        )
    ]
    assert ">image: &lt;b&gt;x&lt;/b&gt;</a>" in clean


def test_markup_inside_attribute_values_is_never_read_as_an_image():
    """The image step scans nh3's output; ``<`` and ``>`` in attribute values are escaped."""
    clean = sanitize_html('<p title="<img src=https://evil.example/t.png>">x</p>')
    assert elements(clean) == [("p", {"title": "<img src=https://evil.example/t.png>"})]
    clean = sanitize_html('<img alt="a>b" src="https://evil.example/t.png">')
    assert elements(clean)[0][0] == "a" and ">image: a&gt;b</a>" in clean


def test_the_image_step_fails_closed_on_a_tag_it_cannot_read():
    """Should a ``>`` ever end the match early, the image is replaced, never kept."""
    cut = '<img alt="a>b" src="https://evil.example/t.png">'
    out = _IMG_TAG.sub(_finish_image, cut)
    assert "<img" not in out and not any(tag == "img" for tag, _ in elements(out))
    kept = '<img src="data:image/gif;base64,R0lG" alt="g">'
    assert _IMG_TAG.sub(_finish_image, kept) == kept


@pytest.mark.parametrize(
    ("src", "expected"),
    [
        ("/\\evil.example/x.png", "image: i"),  # a path, as this policy reads it: no link
        ("https:evil.example/x.png", f'<a href="https:evil.example/x.png" {REL}>image: i</a>'),
        ("  //evil.example/x.png", f'<a href="  //evil.example/x.png" {REL}>image: i</a>'),
        ("ja\nvascript:alert(1)", "image: i"),
        ("data:image/svg+xml,<svg onload=alert(1)>", "image: i"),
    ],
)
def test_images_that_are_not_inline_rasters(src, expected):
    assert sanitize_html(f'<img src="{src}" alt="i">') == expected


def test_the_notebooks_own_and_the_highlighters_classes_are_refused():
    """``lnb-*`` classes are added only by highlighting, after sanitizing: never by a model."""
    assert sanitize_html('<span class="lnb-k lnb-code jp-Dialog">x</span>') == "<span>x</span>"
    assert sanitize_html('<span class="lnb-k language-py">x</span>') == (
        '<span class="language-py">x</span>'
    )


def test_every_link_gets_rel_and_loses_what_the_model_set():
    assert sanitize_html(
        '<a href="https://x.org" rel="opener" target="_blank" ping="/p">t</a>'
    ) == (f'<a href="https://x.org" {REL}>t</a>')
    assert sanitize_html("<a>t</a>") == f"<a {REL}>t</a>"
    assert sanitize_html('<a href="vbscript:msgbox(1)">t</a>') == f"<a {REL}>t</a>"
    assert sanitize_html('<a href="java&#x09;script:alert(1)">t</a>') == f"<a {REL}>t</a>"
    assert (
        sanitize_html('<a href="../notes.md#top">t</a>') == f'<a href="../notes.md#top" {REL}>t</a>'
    )


def test_comments_and_conditional_comments_are_removed():
    assert sanitize_html("<!-- <script>x()</script> -->a<!--[if IE]><b>x</b><![endif]-->") == "a"


def test_dropped_elements_as_a_browser_parses_them():
    """``<embed>`` is empty, so what follows it stays; an HTML tag such as ``<p>`` ends an
    ``<svg>`` (as in every browser), so only the svg's own content is dropped."""
    assert sanitize_html("<embed src=x.swf>after") == "after"
    assert sanitize_html("<svg><script>x()</script><g>drawn</g></svg>after") == "after"
    assert sanitize_html("<svg><g>drawn</g><p>text</p></svg>") == "<p>text</p>"
    assert sanitize_html("<math><mi>x</mi></math>z") == "z"
    assert sanitize_html("<template><b>t</b></template><noscript>n</noscript>z") == "z"


def test_sanitizing_twice_changes_nothing():
    for html in (
        "<IMG SRC=' https://evil.example/t.png' alt=chart>",
        '<img src="x" alt="a">',
        '<img src="data:image/png;base64,AA" alt="p">',
        '<a href="https://x.org" target=_blank>t</a><b>open',
        "a\u00a0b &amp; < <details open><summary>s</summary></details>",
        '<pre><code class="language-python jp-X">x &lt; 1</code></pre>',
    ):
        once = sanitize_html(html)
        assert sanitize_html(once) == once, html
