"""The convergence criterion against hand-derived cases."""
from __future__ import annotations

import math

from mlpl_lab.core.convergence import convergence


def test_a_rising_last_quarter_is_not_converged():
    # 4 epochs: the last quarter is epoch 4; before it the best is 70 -> gain 10
    c = convergence([50, 60, 70, 80])
    assert c["last_epochs"] == 1 and c["gain"] == 10 and c["converged"] is False


def test_a_flat_tail_is_converged():
    # 8 epochs: last quarter = epochs 7-8 (best 80.3); before: best 80.0 -> gain 0.3
    c = convergence([40, 60, 70, 75, 79, 80.0, 80.2, 80.3])
    assert c["last_epochs"] == 2 and math.isclose(c["gain"], 0.3, abs_tol=1e-9) and c["converged"]


def test_the_threshold_is_strict():
    # gain exactly 0.5 is still learning
    assert convergence([10, 20, 30, 30.5])["converged"] is False
    assert convergence([10, 20, 30, 30.49])["converged"] is True


def test_a_curve_that_peaked_earlier_counts_as_converged():
    c = convergence([50, 80, 85, 84, 83, 82, 81, 80])  # best in the first three quarters
    assert c["gain"] == 81 - 85 and c["converged"]  # last quarter = epochs 7-8


def test_the_window_rounds_up_and_keeps_one_epoch_before():
    assert convergence([1, 2, 3, 4, 5])["last_epochs"] == 2      # ceil(5/4)
    assert convergence([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16])["last_epochs"] == 4
    assert convergence([1, 2])["last_epochs"] == 1


def test_unjudgeable_curves_say_why():
    one = convergence([80.0])
    assert one["converged"] is False and "one epoch" in one["reason"]
    nan = convergence([80.0, float("nan"), 81.0])
    assert nan["converged"] is False and "NaN" in nan["reason"]
