"""Markdown for code-scanning alerts, built so that the checked code cannot inject any.

A message quotes user source in backticks (`` `F.l1_loss(x, "`[a](http://e)`")` ``). Read as
Markdown, a backtick inside the quoted source closes the span and the rest becomes a link,
an image or HTML in the alert. So the message is re-rendered instead of passed through:
its code spans (CommonMark's rule: a run of N backticks up to the next run of exactly N)
are re-fenced with a backtick run longer than any inside them and padded with spaces, and
all other text has every ASCII punctuation character backslash-escaped, so nothing outside
a code span can open a link, emphasis, HTML, a heading or a list. Control characters and
line breaks are escaped as in text output: the result is one paragraph."""

from __future__ import annotations

import re
import string

from torchlint.safe_io import printable

_BACKTICKS = re.compile(r"`+")
_PUNCTUATION = frozenset(string.punctuation)


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
        out.append(_escape(text[pos:opener.start()]))
        out.append(code_span(_span_content(text[opener.end():runs[closer].start()])))
        pos = runs[closer].end()
        i = closer + 1
    out.append(_escape(text[pos:]))
    return "".join(out)


def code_span(content: str) -> str:
    """`content` as one code span, whatever backticks it holds."""
    longest = max((len(m.group()) for m in _BACKTICKS.finditer(content)), default=0)
    fence = "`" * (longest + 1)
    return f"{fence} {content} {fence}"


def _span_content(raw: str) -> str:
    # CommonMark strips one space from each side when both are there.
    if len(raw) >= 2 and raw[0] == " " and raw[-1] == " " and raw.strip(" "):
        return raw[1:-1]
    return raw


def _escape(text: str) -> str:
    return "".join("\\" + c if c in _PUNCTUATION else c for c in text)
