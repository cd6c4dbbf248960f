"""Markdown for code-scanning alerts, built so that the checked code cannot inject any.

A message quotes user source in backticks (`` `F.l1_loss(x, "`[a](http://e)`")` ``). Read as
Markdown, a backtick inside the quoted source closes the span and the rest becomes a link,
an image or HTML in the alert. So the message is re-rendered instead of passed through:
its code spans (CommonMark's rule: a run of N backticks up to the next run of exactly N)
are re-fenced with a backtick run longer than any inside them, padded with spaces where
the content needs it, and the text between them has every character that can start
Markdown inline syntax backslash-escaped (links, images, emphasis, HTML, entities, tables,
strikethrough), as well as a block marker at its start. Control characters and line breaks
are escaped as in text output, so the result is one paragraph. A bare URL in the quoted
source may still be linkified by the viewer; it then shows its real target."""

from __future__ import annotations

import re

from torchlint.safe_io import printable

_BACKTICKS = re.compile(r"`+")
_INLINE = frozenset("\\`*_[]<>!&|~")
_BLOCK_START = re.compile(r"^(\s*)([#>+\-=]|\d+[.)])")

def safe_markdown(text: str) -> str:
    """`text` (a message with code spans) as Markdown that renders only text and code spans."""
    text = printable(text)
    out: list[str] = []
    pos = 0
    runs = list(_BACKTICKS.finditer(text))
    i = 0
    while i < len(runs):
        opener = runs[i]
        closer = next((j for j in range(i + 1, len(runs)) if len(runs[j].group()) == len(opener.group())), None)
        if closer is None:  # a lone backtick run is literal text
            i += 1
            continue
        out.append(_escape(text[pos:opener.start()], at_start=pos == 0))
        out.append(code_span(_span_content(text[opener.end():runs[closer].start()])))
        pos = runs[closer].end()
        i = closer + 1
    out.append(_escape(text[pos:], at_start=pos == 0))
    return "".join(out)


def code_span(content: str) -> str:
    """`content` as one code span, whatever backticks or spaces it holds."""
    longest = max((len(m.group()) for m in _BACKTICKS.finditer(content)), default=0)
    fence = "`" * (longest + 1)
    # CommonMark drops one space from each end when both are spaces: pad to keep them, and
    # pad a content that starts or ends with a backtick, which would lengthen the fence.
    pad = content[:1] == "`" or content[-1:] == "`" or (content[:1] == content[-1:] == " " and content.strip(" "))
    return f"{fence} {content} {fence}" if pad else f"{fence}{content}{fence}"


def _span_content(raw: str) -> str:
    if len(raw) >= 2 and raw[0] == " " and raw[-1] == " " and raw.strip(" "):
        return raw[1:-1]
    return raw


def _escape(text: str, at_start: bool) -> str:
    out = []
    for i, c in enumerate(text):
        # An underscore between letters cannot start emphasis: leave `grad_fn` readable.
        if c in _INLINE and not (c == "_" and 0 < i < len(text) - 1 and text[i - 1].isalnum()
                                 and text[i + 1].isalnum()):
            out.append("\\" + c)
        else:
            out.append(c)
    escaped = "".join(out)
    if at_start:  # a heading, quote, list item or setext underline at the paragraph's start
        escaped = _BLOCK_START.sub(lambda m: m.group(1) + "".join("\\" + c if not c.isdigit() else c
                                                                     for c in m.group(2)), escaped, count=1)
    return escaped
