"""Syntax highlighting for the code blocks of sanitized HTML, with Pygments.

It runs on the sanitizer's output and adds only what it can vouch for. A block
``<pre><code class="language-X">`` whose content is plain text gets its text unescaped, lexed
by Pygments (a lexer chosen by the language's name) and escaped again by Pygments, inside
``<span>`` elements whose classes all begin ``lnb-``: Pygments' short token classes with a
prefix that the sanitizer never lets model output carry. The result is checked before it
replaces the block (nothing but those spans around escaped text) and the whole block is
wrapped in ``<span class="lnb-code">``, the container that ``HIGHLIGHT_CSS`` is scoped to.
An unknown language, a block holding markup rather than text, or one longer than
``MAX_HIGHLIGHT`` characters (a stream re-renders its text often) is left as it was.

Colours are JupyterLab's editor variables (``--jp-mirror-editor-*``), so code in a widget
looks like code in a cell under every JupyterLab and Notebook 7 theme, light or dark. Where
those variables are missing the fallbacks are Pygments' ``default`` style, or ``monokai``
under a dark VS Code theme. Pygments is imported on first use, ``HIGHLIGHT_CSS`` included.
"""

from __future__ import annotations

import re
from functools import cache, lru_cache
from html import unescape
from typing import Any

__all__ = ["HIGHLIGHT_CSS", "MAX_HIGHLIGHT", "highlight_code_blocks", "highlight_css"]

MAX_HIGHLIGHT = 20_000  # characters; Pygments lexes about 100-200 kB a second
HIGHLIGHT_CSS: str  # `highlight_css()`, built when first read (see `__getattr__`)
CLASS_PREFIX = "lnb-"
_BLOCK = re.compile(r'(<pre><code class="language-([\w+#.-]+)[^"]*">)([^<]*)(</code></pre>)')
_TOKEN_TAG = re.compile(r'<span class="lnb-[\w-]+(?: lnb-[\w-]+)*">|</span>')

# Pygments token type -> JupyterLab's editor colour for it; a token without an entry takes its
# nearest ancestor's, and one with none at all keeps the text colour.
_THEME_COLOURS = {
    "Keyword": "keyword",
    "Operator": "operator",
    "Operator.Word": "keyword",
    "Punctuation": "punctuation",
    "Comment": "comment",
    "Comment.Preproc": "meta",
    "Literal": "atom",
    "Literal.String": "string",
    "Literal.String.Escape": "string-2",
    "Literal.String.Interpol": "string-2",
    "Literal.String.Regex": "string-2",
    "Literal.Number": "number",
    "Name.Builtin": "builtin",
    "Name.Builtin.Pseudo": "variable-2",
    "Name.Exception": "builtin",
    "Name.Function": "def",
    "Name.Class": "def",
    "Name.Decorator": "meta",
    "Name.Tag": "tag",
    "Name.Attribute": "attribute",
    "Name.Property": "property",
    "Name.Variable": "variable-2",
    "Generic.Heading": "header",
    "Generic.Subheading": "header",
    "Generic.Deleted": "error",
    "Generic.Inserted": "quote",
    "Generic.Error": "error",
    "Generic.Traceback": "error",
    "Error": "error",
}
_DARK = ':is([data-jp-theme-light="false"], .vscode-dark)'  # dark themes, variables or not


def highlight_code_blocks(html: str) -> str:
    """``html`` (sanitized) with its ``language-*`` code blocks highlighted."""
    if '<pre><code class="language-' not in html:
        return html  # nothing to do: Pygments is not even imported
    return _BLOCK.sub(_highlight_block, html)


def _highlight_block(block: re.Match[str]) -> str:
    opening, language, text, closing = block.groups()
    lexer = _lexer(language) if len(text) <= MAX_HIGHLIGHT else None
    if lexer is None:
        return block.group()
    from pygments import highlight

    code = unescape(text)
    try:
        tokens = highlight(code, lexer, _formatter())
    except Exception:  # a lexer's bug must not cost the reader the message
        return block.group()
    if not code.endswith("\n") and tokens.endswith("\n"):
        tokens = tokens[:-1]  # the formatter ends every line, the last one too
    rest = _TOKEN_TAG.sub("", tokens)
    if "<" in rest or ">" in rest:  # not Pygments' plain output: keep the block as it was
        return block.group()
    return f'{opening}<span class="{CLASS_PREFIX}code">{tokens}</span>{closing}'


@lru_cache(maxsize=64)
def _lexer(language: str) -> Any:
    from pygments.lexers import get_lexer_by_name
    from pygments.util import ClassNotFound

    try:  # keep the text exactly: no newlines stripped or added
        return get_lexer_by_name(language, stripnl=False, ensurenl=False)
    except ClassNotFound:
        return None


@cache
def _formatter() -> Any:
    from pygments.formatters import HtmlFormatter

    return HtmlFormatter(nowrap=True, classprefix=CLASS_PREFIX)


@cache
def highlight_css(scope: str = f".{CLASS_PREFIX}code") -> str:
    """CSS rules for the token classes inside ``scope`` (one selector or a comma list)."""
    from pygments.styles import get_style_by_name
    from pygments.token import STANDARD_TYPES, string_to_tokentype

    light, dark = get_style_by_name("default"), get_style_by_name("monokai")
    colours = {string_to_tokentype(name): var for name, var in _THEME_COLOURS.items()}
    rules: dict[tuple[str, str], list[str]] = {}  # (theme, declarations) -> classes sharing them
    for token, short in sorted(STANDARD_TYPES.items(), key=lambda item: item[1]):
        if not short:
            continue
        var = next((colours[t] for t in token.split()[::-1] if t in colours), None)
        found, declarations = light.style_for_token(token), []
        if var:
            for theme, style in (("", light), (_DARK, dark)):
                colour = style.style_for_token(token)["color"]
                fallback = f", #{colour}" if colour else ""  # none: the text colour
                declarations.append(f"color: var(--jp-mirror-editor-{var}-color{fallback})")
                if theme:  # the dark rule sets the colour only
                    rules.setdefault((theme, declarations.pop()), []).append(short)
        declarations += ["font-weight: bold"] * found["bold"] + ["font-style: italic"] * found[
            "italic"
        ]
        if declarations:
            rules.setdefault(("", "; ".join(declarations)), []).append(short)
    scopes = [s.strip() for s in scope.split(",") if s.strip()]
    lines = []
    for (theme, declarations), shorts in sorted(rules.items()):  # dark rules last: they win
        tokens = ", ".join(f".{CLASS_PREFIX}{short}" for short in shorts)
        selector = ", ".join(f"{theme} {s} :is({tokens})".lstrip() for s in scopes)
        lines.append(f"{selector} {{ {declarations} }}")
    return "\n".join(lines)


def __getattr__(name: str) -> str:
    if name == "HIGHLIGHT_CSS":  # built on first use, so importing this module stays cheap
        return highlight_css()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
