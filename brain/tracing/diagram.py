"""The terminal sequence diagram: a column per actor, a row per message in time order."""

from __future__ import annotations

from typing import Any

from brain.tracing.model import lanes_and_arrows

LANE_WIDTH = 18


def render(lines: list[dict[str, Any]], everything: list[dict[str, Any]], title: str) -> str:
    """One session's diagram as text; `everything` names the lanes (the whole trace)."""
    lanes, arrows = lanes_and_arrows(lines, everything)
    if not arrows:
        return f"{title}: no lines\n"
    origin = arrows[0].t_us
    out = [title, " " * 12 + "".join(name[:LANE_WIDTH - 2].center(LANE_WIDTH) for name in lanes)]
    for arrow in arrows:
        row = [" "] * (LANE_WIDTH * len(lanes))
        for index in range(len(lanes)):
            row[_centre(index)] = "│"
        if arrow.commit or arrow.target is None:
            row[_centre(arrow.source)] = "◆" if arrow.commit else "●"
        elif arrow.target == arrow.source:
            row[_centre(arrow.source)] = "↺"
        else:
            a, b = _centre(arrow.source), _centre(arrow.target)
            step = 1 if b > a else -1
            for col in range(a + step, b, step):
                row[col] = "─"
            row[a] = "├" if step > 0 else "┤"
            row[b - step] = "▶" if step > 0 else "◀"
        offset = f"+{arrow.t_us - origin}µs"
        out.append(f"{offset:>11} " + "".join(row).rstrip() + "  " + arrow.label)
    return "\n".join(out) + "\n"


def _centre(index: int) -> int:
    return index * LANE_WIDTH + LANE_WIDTH // 2
