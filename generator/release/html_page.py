"""The pieces the HTML report and preview share: a self-contained page, instances as HTML and
word-level highlighting of what differs between two texts.

Pages load nothing from the network: styles are inline, charts are inline SVG, and there is
no script.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from html import escape
from itertools import groupby
from typing import Any

from ..core.bounded_diff import opcodes

_STYLE = """
body { font-family: sans-serif; margin: 1.5rem; color: #222; max-width: 110rem; }
h1 { font-size: 1.5rem; } h2 { font-size: 1.2rem; margin-top: 2rem; }
h3 { font-size: 1rem; }
table { border-collapse: collapse; margin: 0.5rem 0; font-size: 0.85rem; }
th, td { border: 1px solid #ccc; padding: 0.2rem 0.45rem; text-align: left; vertical-align: top; }
th { background: #f2f2f2; }
/* Words wrap whole: a table cell breaks between words, and inside a long name only where
   the page offers it (after a dot, an underscore or a slash); a card's text breaks inside a
   word only where the word alone is wider than the card. */
td, th { overflow-wrap: normal; word-break: normal; hyphens: manual; }
.answer, .message, .feedback { overflow-wrap: break-word; }
.table-wrap { overflow-x: auto; max-width: 100%; }
td.fail, span.fail { color: #b00020; font-weight: bold; }
td.ok, span.ok { color: #1b5e20; }
td.near { color: #8a5a00; font-weight: bold; }
nav.contents ol { margin: 0.3rem 0; padding-left: 1.2rem; }
.feedback { font-size: 0.8rem; margin: 0.3rem 0; }
/* The contents stay in view: a column beside the page, or a bar above it on a narrow one. */
.with-contents { display: grid; grid-template-columns: 16rem minmax(0, 1fr); gap: 1.5rem;
                 align-items: start; }
nav.contents { position: sticky; top: 0.5rem; max-height: calc(100vh - 1rem);
               overflow-y: auto; font-size: 0.85rem; }
nav.contents ol.families { font-size: 0.75rem; }
[id] { scroll-margin-top: 3rem; }
@media (max-width: 64rem) {
  .with-contents { display: block; }
  nav.contents { top: 0; z-index: 1; background: #fff; border-bottom: 1px solid #ccc;
                 padding: 0.3rem 0; max-height: none; }
  nav.contents > ol { display: flex; flex-wrap: wrap; gap: 0 1.2rem; padding-left: 0;
                      list-style: none; }
  nav.contents ol.families { display: none; }
}
details.section { margin-top: 1rem; border-top: 1px solid #ddd; }
details.section > summary { cursor: pointer; }
details.section > summary > h2 { display: inline; margin: 0; }
code { font-size: 0.85rem; }
.charts { display: flex; flex-wrap: wrap; gap: 1rem; } svg { max-width: 100%; height: auto; }
.variants { display: flex; flex-wrap: wrap; gap: 0.75rem; align-items: flex-start; }
.axis-row { margin: 0.4rem 0 0.8rem; } .axis-row > h4 { margin: 0.2rem 0; font-size: 0.85rem; }
.instance { border: 1px solid #bbb; border-radius: 4px; padding: 0.4rem 0.6rem;
            min-width: 16rem; max-width: 26rem; flex: 1 1 20rem; background: #fcfcfc; }
.instance h4 { margin: 0.2rem 0; font-size: 0.9rem; }
.phase { margin: 0.4rem 0; }
.phase-name { font-size: 0.75rem; text-transform: uppercase; color: #666; }
.message { white-space: pre-wrap; font-size: 0.8rem; border-left: 3px solid #ddd;
           padding: 0.15rem 0.4rem; margin: 0.2rem 0; }
.message.user { border-color: #4c72b0; } .message.assistant { border-color: #55a868; }
.message.system, .message.tool { border-color: #937860; }
.role { font-weight: bold; font-size: 0.7rem; color: #555; }
.answer { font-size: 0.8rem; background: #f6f6f6; padding: 0.3rem; }
mark { background: #ffe08a; }
.note { color: #555; font-size: 0.85rem; }
"""


def page(title: str, body: Sequence[str]) -> str:
    """A whole HTML document, nothing fetched from anywhere."""
    return "\n".join([
        "<!DOCTYPE html>",
        '<html lang="en">',
        "<head>",
        '<meta charset="utf-8">',
        f"<title>{escape(title)}</title>",
        f"<style>{_STYLE}</style>",
        "</head>",
        "<body>",
        f"<h1>{escape(title)}</h1>",
        *body,
        "</body>",
        "</html>",
        "",
    ])


def table(header: Sequence[str], rows: Sequence[Sequence[Any]],
          classes: Sequence[Sequence[str]] | None = None) -> str:
    """An HTML table; cell values are escaped, ``classes`` gives a class per cell."""
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    body = []
    for r, row in enumerate(rows):
        cells = []
        for c, value in enumerate(row):
            css = classes[r][c] if classes else ""
            attr = f' class="{css}"' if css else ""
            cells.append(f"<td{attr}>{breakable(str(value))}</td>")
        body.append(f"<tr>{''.join(cells)}</tr>")
    return (f'<div class="table-wrap"><table><thead><tr>{head}</tr></thead>'
            f"<tbody>{''.join(body)}</tbody></table></div>")


#: Where a long name may break: after a dot, an underscore or a slash that a letter follows
#: (``family.name``, ``billing_currency``, ``a/b``; never inside a number such as 0.5).
_BREAK_AFTER = re.compile(r"(?<=\w[._/])(?=[^\W\d])")


def breakable(text: str) -> str:
    """``text`` as HTML whose long names may wrap only between their parts (``<wbr>`` after
    a dot, underscore or slash), never inside a word."""
    return "<wbr>".join(escape(part) for part in _BREAK_AFTER.split(text))


def option_letter(index: int) -> str:
    """How an option's position reads to a person: A for the first, B, … Z, then 27, 28, …"""
    return chr(ord("A") + index) if index < 26 else str(index + 1)


_TOKEN = re.compile(r"\s+|\w+|[^\w\s]")


def highlight(text: str, reference: str | None) -> str:
    """``text`` as HTML with the words that differ from ``reference`` marked (all of it is
    plain when there is no reference or nothing differs); the spaces between two marked words
    are marked too, so that a changed phrase reads as one span."""
    if reference is None or text == reference:
        return escape(text)
    mine, theirs = _TOKEN.findall(text), _TOKEN.findall(reference)
    changed = [False] * len(mine)
    for tag, _, _, start, end in opcodes(theirs, mine):
        if tag != "equal":
            changed[start:end] = [True] * (end - start)
    for k, token in enumerate(mine):
        if not token.strip():  # whitespace: marked only inside a marked phrase
            changed[k] = 0 < k < len(mine) - 1 and changed[k - 1] and changed[k + 1]
    out = []
    for marked, run in groupby(zip(mine, changed, strict=True), key=lambda pair: pair[1]):
        chunk = escape("".join(token for token, _ in run))
        out.append(f"<mark>{chunk}</mark>" if marked else chunk)
    return "".join(out)


def _message_texts(instance: Mapping[str, Any]) -> dict[tuple[str, int], str]:
    return {(phase["phase"], k): m["content"] for phase in instance["phases"]
            for k, m in enumerate(phase["messages"])}


def instance_html(instance: Mapping[str, Any], reference: Mapping[str, Any] | None = None,
                  label: str = "") -> str:
    """One instance as a card: its phases and messages (what differs from ``reference``
    marked), then its answer."""
    theirs = _message_texts(reference) if reference is not None else {}
    parts = [f'<div class="instance" data-id="{escape(instance["id"])}">',
             f"<h4>{escape(instance['variant'])}{escape(label)}</h4>",
             f'<div class="note"><code>{escape(instance["id"])}</code></div>']
    for phase in instance["phases"]:
        parts.append(f'<div class="phase"><div class="phase-name">{escape(phase["phase"])}'
                     f"{'' if phase['messages'] else ' (empty)'}</div>")
        for k, message in enumerate(phase["messages"]):
            role = message["role"]
            other = theirs.get((phase["phase"], k)) if reference is not None else None
            if reference is not None and other is None:
                other = ""  # a message the reference lacks: all of it differs
            parts.append(f'<div class="message {escape(role)}"><span class="role">'
                         f"{escape(role)}</span>\n{highlight(message['content'], other)}</div>")
        parts.append("</div>")
    parts += _feedback_html(instance.get("feedback"))
    parts.append(_answer_html(instance["answer"]))
    parts.append("</div>")
    return "\n".join(parts)


def variants_html(instances: Sequence[Mapping[str, Any]], reference_label: str = "") -> str:
    """A group's variants as a grid that wraps to the page's width, what differs from the
    first variant marked: one row per value of the first axis where a variant has two axes
    or more (condition × rotation: a row per condition), else one row."""
    def card(k: int, instance: Mapping[str, Any]) -> str:
        return instance_html(instance, None if k == 0 else instances[0],
                             reference_label if k == 0 else "")

    axes = instances[0].get("axes") or {} if instances else {}
    if len(axes) < 2:
        return '<div class="variants">' + "".join(card(k, i) for k, i in
                                                  enumerate(instances)) + "</div>"
    first = next(iter(axes))
    rows: dict[str, list[str]] = {}
    for k, instance in enumerate(instances):
        value = str((instance.get("axes") or {}).get(first, ""))
        rows.setdefault(value, []).append(card(k, instance))
    return "".join(f'<div class="axis-row"><h4>{escape(first)} = {escape(value)}</h4>'
                   f'<div class="variants">{"".join(cards)}</div></div>'
                   for value, cards in rows.items())


def _feedback_html(feedback: Any) -> list[str]:
    """The user's feedback actions of a session (like, dislike, copy …), round by round."""
    if not isinstance(feedback, list) or not feedback:
        return []
    rounds = [f"round {f.get('round', k + 1)}: {f.get('action', '?')}"
              + (" (the session ends)" if f.get("terminated") else "")
              for k, f in enumerate(feedback) if isinstance(f, Mapping)]
    return ['<div class="feedback"><b>feedback</b>: ' + escape("; ".join(rounds)) + "</div>"]


def _answer_html(answer: Mapping[str, Any]) -> str:
    """The answer as a reader checks it: the options lettered as a model sees them (A, B …)
    with the right one named by its letter."""
    lines = [f"<b>scorer</b>: {escape(str(answer['scorer']))}"] if "scorer" in answer else []
    options = answer.get("options")
    if isinstance(options, list) and options:
        gold = answer.get("gold_index")
        lines.append("<b>options</b>: " + "; ".join(
            f"{option_letter(k)}) {escape(str(o))}" for k, o in enumerate(options)))
        if isinstance(gold, int) and 0 <= gold < len(options):
            lines.append(f"<b>gold</b>: {option_letter(gold)}) {escape(str(options[gold]))}")
    elif "gold" in answer:
        lines.append(f"<b>gold</b>: {escape(str(answer['gold']))}")
    if "rubric" in answer:
        lines.append(f"<b>rubric</b>: {escape(str(answer['rubric']))}")
    return '<div class="answer">' + "<br>".join(lines) + "</div>"
