"""Line charts as inline SVG for the `torchlint run --report` page: no script, no network, no
chart library. Each series is one `<polyline class="line">` whose `data-points` says how many
points it holds; values that are not finite are left out of the line and drawn as a cross
(`class="nonfinite"`) on the top edge."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from html import escape

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Optional

PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#bcbd22", "#7f7f7f")
WIDTH, HEIGHT = 1000, 260
LEFT, RIGHT, TOP, BOTTOM = 72, 16, 14, 34
LOG_SPAN = 1e3  # positive values spanning this ratio or more are drawn on a log scale


@dataclass
class Line:
    label: str
    points: list[tuple[float, float]] = field(default_factory=list)  # (step, value)


@dataclass
class Scale:
    low: float
    high: float
    log: bool = False

    def fraction(self, value: float) -> float:
        if self.log:
            value, low, high = math.log10(value), math.log10(self.low), math.log10(self.high)
        else:
            low, high = self.low, self.high
        return (value - low) / (high - low) if high > low else 0.5


def colour(index: int) -> str:
    return PALETTE[index % len(PALETTE)]


def _nice_ticks(low: float, high: float, count: int = 5) -> list[float]:
    if high <= low:
        return [low]
    raw = (high - low) / count
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= raw)
    first = math.ceil(low / step) * step
    return [first + i * step for i in range(int((high - first) / step + 1e-9) + 1)]


def _log_ticks(scale: Scale) -> list[float]:
    low, high = math.floor(math.log10(scale.low)), math.ceil(math.log10(scale.high))
    every = max(1, (high - low) // 6)
    return [10.0 ** e for e in range(low, high + 1, every) if scale.low <= 10.0 ** e <= scale.high]


def _label(value: float) -> str:
    return f"{value:.3g}" if value == 0 or 1e-3 <= abs(value) < 1e5 else f"{value:.0e}"


def _y_scale(values: list[float]) -> Scale:
    low, high = min(values), max(values)
    if low > 0 and high / low >= LOG_SPAN:
        return Scale(low, high, log=True)
    if high == low:
        pad = abs(high) * 0.1 or 1.0
        return Scale(low - pad, high + pad)
    pad = (high - low) * 0.05
    return Scale(low - pad, high + pad)


def _axes(xs: Scale, ys: Scale, x_label: str) -> list[str]:
    inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    out = [f'<rect x="{LEFT}" y="{TOP}" width="{inner_w}" height="{inner_h}" fill="#ffffff" stroke="#999999"/>']
    for tick in _log_ticks(ys) if ys.log else _nice_ticks(ys.low, ys.high):
        y = TOP + inner_h * (1 - ys.fraction(tick))
        out.append(f'<line x1="{LEFT}" x2="{WIDTH - RIGHT}" y1="{y:.1f}" y2="{y:.1f}" stroke="#e6e6e6"/>'
                   f'<text x="{LEFT - 6}" y="{y + 4:.1f}" text-anchor="end" class="tick">{_label(tick)}</text>')
    for tick in _nice_ticks(xs.low, xs.high, 8):
        if tick != int(tick):
            continue
        x = LEFT + inner_w * xs.fraction(tick)
        out.append(f'<line x1="{x:.1f}" x2="{x:.1f}" y1="{TOP + inner_h}" y2="{TOP + inner_h + 4}" stroke="#999999"/>'
                   f'<text x="{x:.1f}" y="{TOP + inner_h + 17}" text-anchor="middle" class="tick">{int(tick)}</text>')
    out.append(f'<text x="{LEFT + inner_w / 2:.1f}" y="{HEIGHT - 3}" text-anchor="middle" class="tick">{escape(x_label)}</text>')
    return out


def chart(lines: list[Line], chart_id: str, offset: int = 0, marker: Optional[tuple[float, str]] = None,
          x_label: str = "optimizer step") -> str:
    """An SVG line chart of `lines` (colours from PALETTE, starting at `offset`), with an
    optional vertical marker (step, label), followed by its legend. Empty when no line has a point."""
    lines = [line for line in lines if line.points]
    if not lines:
        return ""
    steps = [x for line in lines for x, _ in line.points] + ([marker[0]] if marker else [])
    finite = [y for line in lines for _, y in line.points if math.isfinite(y)]
    xs = Scale(min(steps), max(steps)) if max(steps) > min(steps) else Scale(min(steps) - 1, max(steps) + 1)
    ys = _y_scale(finite or [0.0, 1.0])
    if ys.log:  # a value at or below 0 has no place on a log axis
        finite = [y for y in finite if y > 0]
    inner_w, inner_h = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM
    body = _axes(xs, ys, x_label + (" (log scale)" if ys.log else ""))
    if marker:
        x = LEFT + inner_w * xs.fraction(marker[0])
        right = x > LEFT + inner_w / 2  # the label on the side with room
        body.append(f'<line class="marker" x1="{x:.1f}" x2="{x:.1f}" y1="{TOP}" y2="{TOP + inner_h}" stroke="#cc0000" '
                    f'stroke-dasharray="4 3"/><text x="{x - 6 if right else x + 6:.1f}" y="{TOP + 24}" class="tick" '
                    f'text-anchor="{"end" if right else "start"}">{escape(marker[1])}</text>')
    for index, line in enumerate(lines):
        stroke = colour(offset + index)
        drawn, crosses = [], []
        for step, value in line.points:
            x = LEFT + inner_w * xs.fraction(step)
            if math.isfinite(value) and (value > 0 or not ys.log):
                drawn.append(f"{x:.1f},{TOP + inner_h * (1 - ys.fraction(value)):.1f}")
            else:
                crosses.append(f'<path class="nonfinite" d="M{x - 4:.1f},{TOP + 2} l8,8 m0,-8 l-8,8" stroke="{stroke}"/>')
        body.append(f'<polyline class="line" data-chart="{chart_id}" data-label="{escape(line.label)}" '
                    f'data-points="{len(drawn)}" '
                    f'points="{" ".join(drawn)}" fill="none" stroke="{stroke}" stroke-width="2.5" '
                    'stroke-linejoin="round"/>')
        body.extend(crosses)
    legend = "".join(f'<li><span class="swatch" style="background:{colour(offset + i)}"></span>{escape(line.label)}'
                     f' <span class="dim">({len(line.points)} point(s))</span></li>' for i, line in enumerate(lines))
    return (f'<svg id="{chart_id}" class="chart" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" '
            f'xmlns="http://www.w3.org/2000/svg">{"".join(body)}</svg><ul class="legend">{legend}</ul>')
