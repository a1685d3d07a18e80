"""Small SVG charts, written by hand so that their bytes depend on the data alone.

A plotting library would do more, but its output changes with its version (ids, metadata,
float formatting), and these charts are pinned in release manifests. Every coordinate is an
integer or has one decimal, every text is escaped, and nothing depends on the clock, the
locale or the fonts installed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

PALETTE = ("#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3", "#937860", "#da8bc3",
           "#8c8c8c", "#ccb974", "#64b5cd")
_FONT = "font-family=\"sans-serif\" font-size=\"12\""


def _num(value: float) -> str:
    """One decimal at most, and never an exponent or a locale's separator."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def _svg(width: int, height: int, title: str, body: list[str]) -> str:
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'viewBox="0 0 {width} {height}" role="img" aria-label="{escape(title)}">',
        f"<title>{escape(title)}</title>",
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text x="8" y="18" {_FONT} font-weight="bold">{escape(title)}</text>',
        *body, "</svg>", ""])


def _legend(names: Sequence[str], left: int, step: int) -> list[str]:
    """A swatch and a name per series, in a row at the top, ``step`` pixels apart."""
    body = []
    for k, name in enumerate(names):
        x = left + k * step
        body += [f'<rect x="{x}" y="28" width="10" height="10" '
                 f'fill="{PALETTE[k % len(PALETTE)]}"/>',
                 f'<text x="{x + 14}" y="37" {_FONT}>{escape(name)}</text>']
    return body


def stacked_bars(title: str, rows: Sequence[tuple[str, Sequence[int]]],
                 legend: Sequence[str]) -> str:
    """One horizontal bar per row, split into segments by share (e.g. how often the right
    answer sits in each position): equal segments mean balance."""
    label_width, bar_width, row_height = 330, 360, 22
    height = 48 + row_height * len(rows) + 24
    width = label_width + bar_width + 20
    body = _legend(legend, label_width, 80)
    for index, (label, counts) in enumerate(rows):
        y = 48 + index * row_height
        body.append(f'<text x="{label_width - 6}" y="{y + 15}" {_FONT} '
                    f'text-anchor="end">{escape(label)}</text>')
        total = sum(counts) or 1
        x = float(label_width)
        for k, count in enumerate(counts):
            share = bar_width * count / total
            body.append(f'<rect x="{_num(x)}" y="{y + 3}" width="{_num(share)}" height="16" '
                        f'fill="{PALETTE[k % len(PALETTE)]}"><title>{escape(label)}: '
                        f'{escape(legend[k])} {count}</title></rect>')
            if share >= 24:
                body.append(f'<text x="{_num(x + share / 2)}" y="{y + 15}" {_FONT} '
                            f'text-anchor="middle" fill="#ffffff">{count}</text>')
            x += share
    return _svg(width, height, title, body)


def histogram(title: str, frequencies: Mapping[int, int], bins: int = 20, unit: str = "") -> str:
    """Integer values, given as how often each occurs, counted in ``bins`` equal
    integer-width bins from the least to the most. (Frequencies, not the values themselves,
    so that a chart of millions of values takes no more memory than one of a few.)"""
    width, height, left, top, plot_w, plot_h = 520, 220, 48, 30, 452, 150
    body = []
    frequencies = {value: n for value, n in frequencies.items() if n > 0}
    if not frequencies:
        body.append(f'<text x="{left}" y="{top + 20}" {_FONT}>no values</text>')
        return _svg(width, height, title, body)
    low, high = min(frequencies), max(frequencies)
    step = max(1, -(-(high - low + 1) // bins))  # integer bin width, rounded up
    counts = [0] * (-(-(high - low + 1) // step))
    for value, n in frequencies.items():
        counts[(value - low) // step] += n
    tallest = max(counts)
    bar = plot_w / len(counts)
    for k, count in enumerate(counts):
        h = plot_h * count / tallest
        lo = low + k * step
        span = f"{lo}" if step == 1 else f"{lo}-{lo + step - 1}"
        body.append(f'<rect x="{_num(left + k * bar + 1)}" y="{_num(top + plot_h - h)}" '
                    f'width="{_num(max(bar - 2, 1))}" height="{_num(h)}" fill="{PALETTE[0]}">'
                    f"<title>{span}{escape(unit)}: {count}</title></rect>")
    axis_y = top + plot_h
    body += [
        f'<line x1="{left}" y1="{axis_y}" x2="{left + plot_w}" y2="{axis_y}" stroke="#333"/>',
        f'<text x="{left}" y="{axis_y + 16}" {_FONT}>{low}</text>',
        f'<text x="{left + plot_w}" y="{axis_y + 16}" {_FONT} text-anchor="end">'
        f"{low + len(counts) * step - 1}{escape(unit)}</text>",
        f'<text x="{left - 6}" y="{top + 10}" {_FONT} text-anchor="end">{tallest}</text>',
        f'<text x="{left + plot_w // 2}" y="{axis_y + 32}" {_FONT} text-anchor="middle">'
        f"{sum(counts)} values, {len(counts)} bins of {step}</text>",
    ]
    return _svg(width, height, title, body)


def paired_bars(title: str, rows: Sequence[tuple[str, Sequence[float], str]],
                legend: Sequence[str], unit: str = "") -> str:
    """Bars side by side, one per arm, for each row (e.g. a phase at one level of the other
    axes), all on one scale from 0, each labelled with its value; each row's ``note`` (e.g.
    in how many groups the arms are the same text) is written after its bars."""
    label_width, bar_width, bar_height = 230, 300, 14
    row_height = bar_height * len(legend) + 10
    width, top = label_width + bar_width + 200, 48
    height = top + row_height * len(rows) + 8
    body = _legend(legend, label_width, 140)
    largest = max((v for _, values, _ in rows for v in values), default=0) or 1
    for index, (label, values, note) in enumerate(rows):
        y = top + index * row_height
        body.append(f'<text x="{label_width - 6}" y="{y + bar_height}" {_FONT} '
                    f'text-anchor="end">{escape(label)}</text>')
        for k, value in enumerate(values):
            length = bar_width * value / largest
            bar_y = y + k * bar_height
            body += [f'<rect x="{label_width}" y="{bar_y + 1}" width="{_num(length)}" '
                     f'height="{bar_height - 2}" fill="{PALETTE[k % len(PALETTE)]}">'
                     f"<title>{escape(label)}: {escape(legend[k])} {_num(value)}{escape(unit)}"
                     "</title></rect>",
                     f'<text x="{_num(label_width + length + 4)}" y="{bar_y + bar_height - 3}" '
                     f'font-family="sans-serif" font-size="10">{_num(value)}</text>']
        body.append(f'<text x="{label_width + bar_width + 44}" y="{y + bar_height}" {_FONT} '
                    f'fill="#555">{escape(note)}</text>')
    return _svg(width, height, title, body)
