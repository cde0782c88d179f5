"""What a drawn figure shows, read back from its artists: tick labels that overlap and the colour
each legend entry is drawn in. The figure tests run these on every figure a chapter draws; the
plot functions call :func:`spread_tick_labels` where long category names may collide."""
from __future__ import annotations

from typing import Dict, List

import numpy as np
from matplotlib.colors import to_hex


def _drawn_tick_labels(axis) -> list:
    """The tick labels ``axis`` draws: visible, non-empty and at a tick inside the view."""
    try:
        ticks = axis._update_ticks()  # the ticks matplotlib will draw (inside the view interval)
    except Exception:  # pragma: no cover - a private API that moved: every tick
        ticks = axis.get_major_ticks() + axis.get_minor_ticks()
    out = []
    for tick in ticks:
        for label in (tick.label1, tick.label2):
            if label.get_visible() and label.get_text().strip():
                out.append(label)
    return out


def _overlap(a, b, pad: float) -> bool:
    return (a.x0 < b.x1 - pad and b.x0 < a.x1 - pad and a.y0 < b.y1 - pad and b.y0 < a.y1 - pad)


#: two labels closer than this (points) read as one ("single positivesingle positive (size-biased)"
#: under a heatmap: the boxes did not overlap, they touched)
MIN_GAP_PT = 3.0


def _min_gap(fig) -> float:
    """:data:`MIN_GAP_PT` in display pixels of ``fig``."""
    return MIN_GAP_PT * fig.dpi / 72.0


def _clashes(texts, renderer, gap: float):
    """Pairs of ``texts`` whose boxes overlap or come closer than ``gap`` pixels."""
    boxes = [t.get_window_extent(renderer) for t in texts]
    return [(texts[i], texts[j]) for i in range(len(texts)) for j in range(i + 1, len(texts))
            if _overlap(boxes[i], boxes[j], -gap)]


def tick_overlaps(fig, pad: float | None = None) -> List[Dict[str, str]]:
    """Every pair of labels of ``fig`` that overlap or come closer than ``pad`` pixels (default
    :data:`MIN_GAP_PT` points), measured after ``fig.canvas.draw()``: the drawn tick labels of each
    axis of every axes — plots, heatmaps and colour bars alike (a colour bar is an axes of the
    figure) — and the entries of each legend. One dict per pair: the axes' title, where ("x", "y"
    or "legend") and the two texts. Empty: nothing collides."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    gap = _min_gap(fig) if pad is None else -pad
    found = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        title = ax.get_title() or ax.get_label() or "(untitled)"
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            for a, b in _clashes(_drawn_tick_labels(axis), renderer, gap):
                found.append({"axes": title, "axis": name, "labels": (a.get_text(), b.get_text())})
    for legend in [ax.get_legend() for ax in fig.axes if ax.get_visible()] + list(fig.legends):
        if legend is None or not legend.get_visible():
            continue
        texts = [t for t in legend.get_texts() if t.get_visible() and t.get_text().strip()]
        for a, b in _clashes(texts, renderer, -0.5):  # a legend's rows sit close by design: overlap only
            found.append({"axes": legend.get_title().get_text() or "(legend)", "axis": "legend",
                          "labels": (a.get_text(), b.get_text())})
    return found


def legend_colours(fig) -> Dict[str, str]:
    """``{legend label: colour (hex)}`` of every legend of ``fig`` (the axes' and the figure's):
    the colour a line, a bar or a marker of that entry is drawn in."""
    legends = [ax.get_legend() for ax in fig.axes] + list(fig.legends)
    out = {}
    for legend in legends:
        if legend is None:
            continue
        for text, handle in zip(legend.get_texts(), legend.legend_handles):
            colour = _handle_colour(handle)
            if colour is not None:
                out[text.get_text()] = colour
    return out


def _handle_colour(handle):
    if handle is None:
        return None
    for getter in ("get_color", "get_facecolor", "get_edgecolor"):
        fn = getattr(handle, getter, None)
        if fn is None:
            continue
        value = fn()
        arr = np.asarray(value, dtype=object)
        if isinstance(value, str):
            return to_hex(value)
        try:
            rgba = np.asarray(value, dtype=float).reshape(-1, 4)[0] if arr.size >= 3 else None
        except (TypeError, ValueError):
            rgba = None
        if rgba is not None:
            return to_hex(rgba[:3])
    return None


def spread_tick_labels(ax, axis: str = "x", rotations=(0, 45, 90), min_size: float = 6.0) -> None:
    """Make the drawn tick labels of ``ax``'s ``axis`` stop overlapping: try each rotation in
    turn, then shrink the font down to ``min_size`` points, then keep every second label.
    Draws the figure to measure the labels (a few milliseconds for these figures)."""
    fig = ax.figure
    target = ax.xaxis if axis == "x" else ax.yaxis

    def clash() -> bool:  # the criterion of tick_overlaps, so what this spreads the check accepts
        fig.canvas.draw()
        return bool(_clashes(_drawn_tick_labels(target), fig.canvas.get_renderer(), _min_gap(fig)))

    if not clash():
        return
    if axis == "x":
        for angle in rotations:
            for lab in target.get_ticklabels():
                lab.set_rotation(angle)
                lab.set_ha("right" if 0 < angle < 90 else "center")
                lab.set_rotation_mode("anchor" if 0 < angle < 90 else "default")
            if not clash():
                return
    size = min(lab.get_fontsize() for lab in target.get_ticklabels())
    while size > min_size:
        size = max(min_size, size - 1)
        for lab in target.get_ticklabels():
            lab.set_fontsize(size)
        if not clash():
            return
    labels = target.get_ticklabels()
    step = 2
    while clash() and step < len(labels):
        for k, lab in enumerate(labels):
            lab.set_visible(k % step == 0)
        step += 1
