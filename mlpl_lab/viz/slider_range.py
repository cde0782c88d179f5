"""A value passed in code to a panel's slider must lie in the slider's range.

ipywidgets clamps a slider's value to ``[min, max]`` without a word, so ``GRPanel(q2=5)`` would
show q2 = 1 and every curve would answer a question nobody asked. The panels call
:func:`check_slider` on each value given in code: outside the range is a ``ValueError`` that
names the value, the range and the fix.
"""
from __future__ import annotations

import math
from typing import Any


def slider_range(slider) -> tuple:
    """``(low, high)`` of a slider in the units its value is given in (a log slider's bounds are
    exponents of its ``base``; the range is ``base**min .. base**max``)."""
    lo, hi = float(slider.min), float(slider.max)
    if hasattr(slider, "base"):  # FloatLogSlider
        return float(slider.base) ** lo, float(slider.base) ** hi
    return lo, hi


def check_value(panel: str, name: str, value: Any, low: float, high: float, note: str = "") -> None:
    """Raise ``ValueError`` unless ``value`` is a finite number in ``[low, high]``."""
    try:
        v = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"{panel}: {name} must be a number in [{low:g}, {high:g}], got {value!r}") from None
    if isinstance(value, bool) or not math.isfinite(v) or not low <= v <= high:
        raise ValueError(f"{panel}: {name} = {value!r} is outside its slider's range [{low:g}, {high:g}]"
                         f"{note}; pass a value in that range (the slider would otherwise silently clamp it)")


def check_slider(panel: str, name: str, slider, value: Any, note: str = "") -> None:
    """``value`` (as passed in code, in the slider's units) against ``slider``'s range."""
    low, high = slider_range(slider)
    check_value(panel, name, value, low, high, note)
