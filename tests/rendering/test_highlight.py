"""Code highlighting on sanitized HTML: Pygments' token spans inside code blocks, nothing else."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from html import unescape
from html.parser import HTMLParser

import pytest

from lion_nb.rendering import (
    HIGHLIGHT_CSS,
    highlight_code_blocks,
    highlight_css,
    markdown_html,
    sanitize_html,
)
from lion_nb.rendering import highlight as highlight_module

PY_OPEN = '<pre><code class="language-python">'


def tags(html: str) -> list[tuple[str, dict[str, str | None]]]:
    found: list[tuple[str, dict[str, str | None]]] = []

    class Collect(HTMLParser):
        def handle_starttag(self, tag, attrs):
            found.append((tag, dict(attrs)))

    parser = Collect()
    parser.feed(html)
    parser.close()
    return found


def block(html: str, opening: str = PY_OPEN) -> str:
    """The content of the first code block that starts with ``opening``."""
    start = html.index(opening) + len(opening)
    return html[start : html.index("</code></pre>", start)]


def text_of(html: str) -> str:
    return unescape(re.sub(r"<[^>]*>", "", html))


def test_a_python_block_gets_token_spans_and_keeps_its_text():
    code = "\n\n@cache\ndef f(x):\n    return x + 1  # one more\n\n"
    html = markdown_html(f"```python\n{code}```", highlight=True)
    inner = block(html)
    assert '<span class="lnb-k">def</span>' in inner
    assert '<span class="lnb-nf">f</span>' in inner and '<span class="lnb-c1"># one more' in inner
    assert inner.startswith('<span class="lnb-code">') and inner.endswith("</span>")
    assert text_of(inner) == code  # every character, leading and trailing newlines included
    assert {tag for tag, _ in tags(inner)} == {"span"}
    assert all(attrs["class"].startswith("lnb-") for _, attrs in tags(inner))


@pytest.mark.parametrize(
    "code",
    [
        "</code><script>alert(1)</script>",
        "</span></code></pre><img src=x onerror=alert(1)>",
        '<span class="lnb-k" onclick="alert(1)">x</span>',
        "&lt;script&gt; written as entities",
    ],
)
def test_hostile_code_stays_escaped_text(code):
    html = markdown_html(f"```python\n{code}\n```", highlight=True)
    assert "<script" not in html and "<img" not in html
    inner = block(html)
    assert text_of(inner) == code + "\n"  # shown exactly as written
    for tag, attrs in tags(html):
        assert tag in ("pre", "code", "span"), tag
        if tag == "pre":
            assert attrs == {}
            continue
        assert set(attrs) == {"class"}, attrs
        assert re.fullmatch(r"(lnb-[\w-]+ ?)+|language-python", attrs["class"]), attrs


def test_hostile_code_in_sanitized_html_given_directly():
    html = sanitize_html(
        f"{PY_OPEN}&lt;/code&gt;&lt;script&gt;alert(1)&lt;/script&gt;</code></pre>"
    )
    out = highlight_code_blocks(html)
    assert "lnb-" in out and "<script" not in out
    assert text_of(block(out)) == "</code><script>alert(1)</script>"


def test_output_other_than_prefixed_token_spans_is_refused(monkeypatch):
    """The check before a block is replaced: spans without the prefix, or any other tag."""
    from pygments.formatters import HtmlFormatter

    html = markdown_html("```python\nx = 1\n```")
    for formatter in (HtmlFormatter(nowrap=True), HtmlFormatter(classprefix="lnb-")):
        monkeypatch.setattr(highlight_module, "_formatter", lambda f=formatter: f)
        assert highlight_code_blocks(html) == html


def test_a_block_holding_markup_is_left_alone():
    html = sanitize_html(f"{PY_OPEN}<b>x</b> = 1</code></pre>")
    assert highlight_code_blocks(html) == html


@pytest.mark.parametrize("fence", ["```nosuchlanguage", "```", "~~~"])
def test_an_unknown_or_missing_language_is_left_plain(fence):
    text = f"{fence}\nx = 1 < 2\n{fence[:3]}"
    assert markdown_html(text, highlight=True) == markdown_html(text)
    assert "lnb-" not in markdown_html(text, highlight=True)


def test_nothing_outside_code_blocks_changes():
    text = (
        "# Title\n\nSome `inline = code` and [a link](https://example.org).\n\n"
        "| a | b |\n|---|---|\n| `x` | 2 |\n\n"
        "```python\nprint('hi')\n```\n\nBetween.\n\n```\nplain block\n```\n\n> quote"
    )
    plain, lit = markdown_html(text), markdown_html(text, highlight=True)
    assert plain != lit
    before = plain[: plain.index(PY_OPEN)]
    after = plain[plain.index("</code></pre>", plain.index(PY_OPEN)) :]
    assert lit.startswith(before) and lit.endswith(after)
    assert lit.count("lnb-code") == 1  # the python block only
    assert text_of(lit) == text_of(plain)


def test_highlighting_is_off_unless_asked():
    text = "```python\nx = 1\n```"
    assert "lnb-" not in markdown_html(text)
    assert markdown_html(text) == sanitize_html(markdown_html(text))


def test_a_block_over_the_limit_is_left_plain(monkeypatch):
    html = markdown_html("```python\nx = 1\n```")
    monkeypatch.setattr(highlight_module, "MAX_HIGHLIGHT", 3)
    assert highlight_code_blocks(html) == html
    monkeypatch.setattr(highlight_module, "MAX_HIGHLIGHT", 100)
    assert "lnb-" in highlight_code_blocks(html)


def test_the_stylesheet_is_scoped_and_themed():
    rules = [line for line in HIGHLIGHT_CSS.splitlines() if line.strip()]
    assert rules and all(".lnb-code :is(" in rule for rule in rules)
    classes = set(re.findall(r"\.([\w-]+)", HIGHLIGHT_CSS)) - {"vscode-dark"}
    assert classes and all(c.startswith("lnb-") for c in classes)
    keyword = [r for r in rules if ".lnb-k," in r]
    assert any(
        r.startswith(".lnb-code") and "--jp-mirror-editor-keyword-color" in r for r in keyword
    )
    assert any('[data-jp-theme-light="false"]' in r for r in keyword)  # dark fallback colours
    html = markdown_html("```python\n@dec\ndef f(): return 'x'  # c\n```", highlight=True)
    used = {c for _, a in tags(html) for c in (a.get("class") or "").split()}
    styled = {"lnb-k", "lnb-nf", "lnb-nd", "lnb-s1", "lnb-c1", "lnb-p"}
    assert styled <= used and all(f".{c}" in HIGHLIGHT_CSS for c in styled)
    scoped = highlight_css(".lnb-view, .lnb-turn")
    assert ".lnb-view :is(.lnb-k" in scoped and ".lnb-turn :is(.lnb-k" in scoped
    assert ".lnb-code" not in scoped


def test_importing_and_plain_rendering_load_no_pygments():
    probe = (
        "import json, sys\n"
        "from lion_nb.rendering import markdown_html\n"
        "loaded = ['pygments' in sys.modules]\n"
        "markdown_html('no code here', highlight=True)\n"
        "loaded.append('pygments' in sys.modules)\n"
        "markdown_html('```python\\nx = 1\\n```', highlight=True)\n"
        "loaded.append('pygments' in sys.modules)\n"
        "print(json.dumps(loaded))\n"
    )
    out = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, check=True
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == [False, False, True]
