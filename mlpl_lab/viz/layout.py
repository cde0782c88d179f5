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


def tick_overlaps(fig, pad: float = 0.5) -> List[Dict[str, str]]:
    """Every pair of drawn tick labels on one axis of ``fig`` whose boxes (in display pixels,
    after ``fig.canvas.draw()``) overlap by more than ``pad`` pixels each way. One dict per pair:
    the axes' title, the axis ("x"/"y") and the two texts. Empty: nothing overlaps."""
    fig.canvas.draw()
    renderer = fig.canvas.get_renderer()
    found = []
    for ax in fig.axes:
        if not ax.get_visible():
            continue
        for name, axis in (("x", ax.xaxis), ("y", ax.yaxis)):
            labels = _drawn_tick_labels(axis)
            boxes = [lab.get_window_extent(renderer) for lab in labels]
            for i in range(len(labels)):
                for j in range(i + 1, len(labels)):
                    if _overlap(boxes[i], boxes[j], pad):
                        found.append({"axes": ax.get_title() or ax.get_label() or "(untitled)",
                                      "axis": name, "labels": (labels[i].get_text(), labels[j].get_text())})
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

    def clash() -> bool:
        fig.canvas.draw()
        renderer = fig.canvas.get_renderer()
        labels = _drawn_tick_labels(target)
        boxes = [lab.get_window_extent(renderer) for lab in labels]
        return any(_overlap(boxes[i], boxes[j], 0.5)
                   for i in range(len(boxes)) for j in range(i + 1, len(boxes)))

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
