"""The series' floor (benchmarks/series_budget.py): the least series the guardrails and the claims'
new runs ask for, counted and priced on a hand-made plan."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import series_budget as sb  # noqa: E402


def _run(notebook, kind, method, epochs, seed=1, pretraining=False, n_train=4000):
    return {"notebook": notebook, "kind": kind, "method": method, "regime": "single_positive",
            "regime_params": {}, "seed": seed, "epochs": epochs, "n_train": n_train, "model_kwargs": {},
            "pretraining": pretraining}


PLAN = ([_run("01", "planned", "full", 8, pretraining=True, n_train=8000)]
        + [_run("07", "pending", "an", 54, seed=s) for s in (1, 2, 3)]    # a data set's runs
        + [_run("07", "pending", "ll_r", 72, seed=s) for s in (1, 2, 3)]  # 07's own length checks
        + [_run("02", "planned", "gr", 54, seed=s) for s in range(5)]     # a chapter's rows
        + [_run("07", "chosen later", "em", 54)])


def test_the_floor_keeps_pretraining_the_guardrails_the_families_and_the_length_checks():
    """Counted by hand: 1 pretraining run; the five guardrail claims on 5 seeds (oracle, AN, GR,
    OPML-SP, CLS, partial BCE: 6 x 5; PU-MLC: 5); the plan's 3 family runs at the profile's 54
    epochs (not its 72-epoch runs); Hill, EM, LL-R and PU-MLC on the default family, 4 x 3; a
    4/3-length check for GR, LL-R and OPML-SP, 3 x 3. Every other planned row is left out."""
    floor = sb.floor_runs(PLAN)
    assert len(floor) == 1 + 30 + 5 + 3 + 12 + 9
    assert sum(r["pretraining"] for r in floor) == 1
    assert sorted(r["epochs"] for r in floor if r["epochs"] == 72) == [72] * 9  # 54 * 4 / 3
    from mlpl_lab.chapters import pu_mlc

    assert [r["epochs"] for r in floor if r["method"] == "pu_mlc" and r["regime"] == "noisy_negatives"] \
        == [pu_mlc.design("cpu").pu_epochs] * 5


def test_the_floor_is_priced_at_each_family_rate():
    """One AN run of 54 epochs at 2 s an epoch and one CLS run at 4 s: 108 + 216 s; halved
    (the 27-epoch schedule): half of that."""
    rate = {"AN": 2.0, "two networks (CLS, Co-teaching)": 4.0}
    runs = [_run("floor", "floor", "an", 54), _run("floor", "floor", "cls", 54)]
    assert sb.price(runs, [], rate)["single_thread_hours"] * 3600 == pytest.approx(324.0)
    assert sb.price(runs, [sb.halve], rate)["wall_hours_two_workers"] * 7200 == pytest.approx(162.0)
