"""`brain trace --html`: the same timeline as one self-contained page (inline SVG, no network)."""

from __future__ import annotations

from html import escape
from typing import Any

from brain.tracing.model import lanes_and_arrows

LANE_GAP = 170
ROW = 24
TOP = 60
LEFT = 110

STYLE = """body{font:13px system-ui,sans-serif;margin:1em}h2{font-size:15px}
svg text{font:12px ui-monospace,monospace}.lane{stroke:#bbb}.arrow{stroke:#333;fill:none}
.commit{fill:#c60}.head{font-weight:bold}.t{fill:#777}"""


def page(sessions: list[tuple[str, list[dict[str, Any]]]],
         everything: list[dict[str, Any]]) -> str:
    """An HTML document with one diagram per (title, lines) pair."""
    parts = ["<!doctype html><html><head><meta charset='utf-8'><title>Brain trace</title>",
             f"<style>{STYLE}</style></head><body>"]
    for title, lines in sessions:
        parts.append(f"<h2>{escape(title)}</h2>")
        parts.append(_svg(lines, everything))
    parts.append("</body></html>\n")
    return "".join(parts)


def _svg(lines: list[dict[str, Any]], everything: list[dict[str, Any]]) -> str:
    lanes, arrows = lanes_and_arrows(lines, everything)
    width = LEFT + LANE_GAP * max(len(lanes), 1) + 360
    height = TOP + ROW * (len(arrows) + 1)
    out = [f"<svg xmlns='http://www.w3.org/2000/svg' width='{width}' height='{height}'>",
           "<defs><marker id='h' markerWidth='8' markerHeight='8' refX='8' refY='4' "
           "orient='auto'><path d='M0,0 L8,4 L0,8 z' fill='#333'/></marker></defs>"]
    for index, name in enumerate(lanes):
        x = _x(index)
        out.append(f"<text class='head' x='{x}' y='{TOP - 20}' text-anchor='middle'>"
                   f"{escape(name)}</text>")
        out.append(f"<line class='lane' x1='{x}' y1='{TOP - 10}' x2='{x}' y2='{height}'/>")
    origin = arrows[0].t_us if arrows else 0
    for row, arrow in enumerate(arrows):
        y = TOP + ROW * row + ROW // 2
        out.append(f"<text class='t' x='4' y='{y + 4}'>+{arrow.t_us - origin}µs</text>")
        a = _x(arrow.source)
        if arrow.commit or arrow.target is None:
            out.append(f"<rect class='commit' x='{a - 5}' y='{y - 5}' width='10' height='10' "
                       f"transform='rotate(45 {a} {y})'/>")
            end = a
        elif arrow.target == arrow.source:
            out.append(f"<path class='arrow' marker-end='url(#h)' "
                       f"d='M{a},{y - 6} C{a + 30},{y - 6} {a + 30},{y + 6} {a + 2},{y + 6}'/>")
            end = a + 30
        else:
            b = _x(arrow.target)
            out.append(f"<line class='arrow' marker-end='url(#h)' x1='{a}' y1='{y}' "
                       f"x2='{b}' y2='{y}'/>")
            end = max(a, b)
        out.append(f"<text x='{end + 8}' y='{y + 4}'>{escape(arrow.label)}</text>")
    out.append("</svg>")
    return "".join(out)


def _x(index: int) -> int:
    return LEFT + LANE_GAP * index + LANE_GAP // 2
