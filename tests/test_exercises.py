"""The exercises' checks are real: a right implementation (written here from the papers'
formulas, not with the library) gets ✓, a plausible wrong one gets ✗, an unfinished one (the
student stub) gets ✗ — and no check ever raises."""
from __future__ import annotations

import math

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from scipy import stats

from mlpl_lab.course import exercises as ex


def run(capsys, check, *args):
    ok = check(*args)
    out = capsys.readouterr().out
    marks = [line[0] for line in out.splitlines() if line[:1] in (ex.PASS, ex.FAIL)]
    assert marks and (all(m == ex.PASS for m in marks) if ok else ex.FAIL in marks), out
    return ok, out


# ---------- oracles written from the papers (loops and closed forms) ----------
def an_targets_loop(observed):
    out = torch.zeros(observed.shape)
    for i in range(observed.shape[0]):
        for j in range(observed.shape[1]):
            out[i, j] = 1.0 if int(observed[i, j]) == 1 else 0.0
    return out


def an_loss_loop(logits, observed):
    total = 0.0
    for z, y in zip(logits.flatten().tolist(), observed.flatten().tolist()):
        p = 1 / (1 + math.exp(-z))
        total += -math.log(p) if y == 1 else -math.log(1 - p)
    return torch.tensor(total / logits.numel())


def opml_loop(logits, observed, alpha, beta):
    rows = []
    for z, y in zip(logits.tolist(), observed.tolist()):
        neg = [math.exp(s) for s, l in zip(z, y) if l != 1]
        pos = [math.exp(-s) for s, l in zip(z, y) if l == 1]
        rows.append((math.log(alpha + sum(neg)) if neg else 0.0) + (math.log(beta + sum(pos)) if pos else 0.0))
    return torch.tensor(rows)


def plc_loop(p, observed, delta):
    t, m = torch.zeros(p.shape), torch.zeros(p.shape, dtype=torch.bool)
    for i in range(p.shape[0]):
        for j in range(p.shape[1]):
            if int(observed[i, j]) == -1 and float(p[i, j]) >= delta:
                t[i, j], m[i, j] = 1.0, True
            elif int(observed[i, j]) == -1 and float(p[i, j]) <= 1 - delta:
                m[i, j] = True
    return t, m


def cross_selection_sort(peer_loss, observed, R_h):
    cells = sorted((float(peer_loss[i, j]), i, j) for i in range(peer_loss.shape[0])
                   for j in range(peer_loss.shape[1]) if int(observed[i, j]) == -1)
    keep = torch.zeros(peer_loss.shape, dtype=torch.bool)
    for _, i, j in cells[: math.floor(R_h * len(cells))]:
        keep[i, j] = True
    return keep


def vpu_class_formula(logits, observed, c, alpha, gamma):
    s = logits[:, c].double()
    T = min(alpha * float(np.std(s.numpy())), 1.0)          # population std
    q = 1 / (1 + np.exp(-s.numpy() / T))
    w = float(np.mean(1 / (1 + np.exp(-s.numpy())))) ** gamma
    pos = observed[:, c].numpy() == 1
    return torch.tensor(w * math.log(q.mean()) - np.log(q[pos]).mean())


def paired_t_by_hand(a, b, m):
    d = np.asarray(a) - np.asarray(b)
    n = len(d)
    half = stats.t.ppf(1 - 0.05 / (2 * m), n - 1) * np.std(d, ddof=1) / math.sqrt(n)
    low, high = d.mean() - half, d.mean() + half
    if n < 3:
        return low, high, "inconclusive"
    return low, high, "holds" if low > 0 else "does not hold" if high < 0 else "inconclusive"


def _judged_anyway(a, b, m):
    low, high, _ = paired_t_by_hand(a, b, m)
    return low, high, "holds" if low > 0 else "does not hold" if high < 0 else "inconclusive"


def stub(*args):
    return None


def raises(*args):
    raise NotImplementedError


CASES = [
    (ex.check_an_targets, (an_targets_loop,), (lambda o: (o != 0).float(),)),
    (ex.check_an_loss, (an_loss_loop,),
     (lambda z, o: F.binary_cross_entropy_with_logits(z[o != -1], (o[o != -1] == 1).float()),)),
    (ex.check_gr_pieces, (lambda p, w, b: 1 / (1 + torch.exp(-(w * p + b))),
                          lambda p, mu, s: torch.exp(-(p - mu) ** 2 / (2 * s * s))),
     (lambda p, w, b: 1 / (1 + torch.exp(-(w * p + b))),
      lambda p, mu, s: torch.exp(-(p - mu) ** 2 / (2 * s * s)) / (s * math.sqrt(2 * math.pi)))),
    (ex.check_unknown_gradient, (lambda p, k, q2, q3: (1 - k) * (1 - p) ** q3 * p - k * p ** q2 * (1 - p),),
     (lambda p, k, q2, q3: (1 - k) * (1 - p) ** q3 - k * p ** q2,)),
    (ex.check_opml_pair_term, (opml_loop,),
     (lambda z, o, a, b: opml_loop(z, torch.where(o == 0, torch.ones_like(o), o), a, b),)),
    (ex.check_cross_selection, (cross_selection_sort,),
     (lambda l, o, R: torch.stack([cross_selection_sort(l[i:i + 1], o[i:i + 1], R)[0] for i in range(len(l))]),)),
    (ex.check_plc_selection, (plc_loop,), (lambda p, o, d: plc_loop(p, torch.full_like(o, -1), d),)),
    (ex.check_vpu_class, (vpu_class_formula,),
     (lambda z, o, c, a, g: vpu_class_formula(z, o, c, a, 0.0),)),
    (ex.check_paired_t, (paired_t_by_hand,),
     # the unadjusted 95 % interval whatever m (the rule the tables no longer use)
     (lambda a, b, m: paired_t_by_hand(a, b, 1),)),
]


@pytest.mark.parametrize("check, right, wrong", CASES, ids=[c[0].__name__ for c in CASES])
def test_implement_checks_tell_right_from_wrong(capsys, check, right, wrong):
    assert run(capsys, check, *right)[0] is True
    ok, out = run(capsys, check, *wrong)
    assert ok is False and "hint:" in out
    for unfinished in (stub, raises):
        ok, out = run(capsys, check, *[unfinished] * len(right))
        assert ok is False and "no answer yet" in out
    ok, _ = run(capsys, check, *[None] * len(right))
    assert ok is False


def test_wrong_shape_and_garbage_never_raise(capsys):
    assert run(capsys, ex.check_an_targets, lambda o: o.flatten())[0] is False
    assert run(capsys, ex.check_an_loss, lambda z, o: "nonsense")[0] is False
    assert run(capsys, ex.check_paired_t, lambda a, b, c: (1, 2))[0] is False


def test_predict_checks(capsys):
    assert run(capsys, ex.check_an_penalty, -math.log(1 - 0.9), 0.9)[0]
    assert not run(capsys, ex.check_an_penalty, -math.log(0.9), 0.9)[0]      # the positive term instead
    assert run(capsys, ex.check_k_crossing, 0.8, 10.0, -8.0)[0]               # 10 p - 8 = 0
    assert not run(capsys, ex.check_k_crossing, 0.5, 10.0, -8.0)[0]
    assert run(capsys, ex.check_k_crossing, "never", 2.0, -3.0)[0]            # 2 p - 3 < 0 on [0, 1]
    assert run(capsys, ex.check_positive_gradient, 1 / (1 + math.exp(-1.5)) - 1, 1.5)[0]
    assert not run(capsys, ex.check_positive_gradient, -0.5, 1.5)[0]
    # 45 unknown, R_h = 0.7 -> 31 kept by the peer, R_l = 0.9 -> 27
    assert run(capsys, ex.check_kept_count, 27, 45, 0.7, 0.9)[0]
    assert not run(capsys, ex.check_kept_count, round(0.7 * 0.9 * 45), 45, 0.7, 0.9)[0]  # 28: one rounding
    p = torch.tensor([[0.05, 0.3, 0.5, 0.7, 0.95]])
    obs = torch.tensor([[-1, -1, -1, -1, 1]])
    assert run(capsys, ex.check_ignored_share, 0.0, p, obs, 0.5)[0]
    assert run(capsys, ex.check_ignored_share, 3 / 4, p, obs, 0.9)[0]         # 0.3, 0.5, 0.7 of 4 unknown
    assert not run(capsys, ex.check_ignored_share, 0.0, p, obs, 0.9)[0]
    logits = torch.randn(32, 6)
    assert run(capsys, ex.check_rebalance_direction, "down", logits, 0.55, 1.0)[0]
    assert run(capsys, ex.check_rebalance_direction, "up", logits, 1.0, 0.55)[0]
    assert not run(capsys, ex.check_rebalance_direction, "up", logits, 0.55, 1.0)[0]
    assert run(capsys, ex.check_hidden_share, 0.55, {"hidden positive share": 0.551})[0]
    assert not run(capsys, ex.check_hidden_share, 0.45, {"hidden positive share": 0.551})[0]


def test_read_the_evidence_checks(capsys):
    record = {"A beats AN": {"verdict": "holds"}, "B beats AN": {"verdict": "inconclusive (2 seeds)"},
              "C beats AN": {"verdict": "does not hold"}, "D beats A": {"verdict": "holds (Holm)"}}
    assert run(capsys, ex.check_claims_that_hold, ["A beats AN", "D beats A"], record)[0]
    assert not run(capsys, ex.check_claims_that_hold, ["A beats AN"], record)[0]
    assert not run(capsys, ex.check_claims_that_hold, list(record), record)[0]
    assert run(capsys, ex.check_claims_that_hold, [], {"x": {"verdict": "inconclusive"}})[0]
    values = {"AN": 50.0, "GR": 61.0, "full labels": 70.0}
    assert run(capsys, ex.check_pick, "t", "GR", values, "h", True, ("full labels",))[0]
    assert not run(capsys, ex.check_pick, "t", "full labels", values, "h", True, ("full labels",))[0]
    assert run(capsys, ex.check_pick, "t", "AN", values, "h", False)[0]


def test_paired_verdict_check_refuses_other_wrong_rules(capsys):
    """A verdict read off the sign of the mean, or a verdict given below 3 seeds, is wrong."""
    sign = lambda a, b, m: paired_t_by_hand(a, b, m)[:2] + (
        "holds" if np.mean(np.subtract(a, b)) > 0 else "inconclusive",)
    assert run(capsys, ex.check_paired_t, sign)[0] is False
    assert run(capsys, ex.check_paired_t, _judged_anyway)[0] is False


def test_paired_t_reference_is_scipy():
    a, b = [71.0, 69.5, 72.2, 70.1], [68.0, 69.0, 70.5, 67.9]
    d = np.subtract(a, b)
    low, high = stats.t.interval(0.95, 3, loc=d.mean(), scale=stats.sem(d))
    got = ex.paired_t_reference(a, b, 1)
    assert got[:2] == pytest.approx((low, high)) and got[2] == ("holds" if low > 0 else "inconclusive")
    # m = 5: level 0.99, t(0.995, 3) = 5.841 from a printed t table
    got5 = ex.paired_t_reference(a, b, 5)
    assert got5[1] - d.mean() == pytest.approx(5.841 * stats.sem(d), abs=1e-3)


def test_a_pick_with_a_tie_accepts_every_tied_answer(capsys):
    """Bug caught: 00's Exercise 3 marked one of two equal rows wrong (known 10 % and positives only
    10 % hide the same positives, so AN's false-negative rate is the same number)."""
    values = {"single positive": 0.0953, "known 10 %": 0.12827, "positives only 10 %": 0.12827}
    for answer in ("known 10 %", "positives only 10 %"):
        ok, out = run(capsys, ex.check_pick, "t", answer, values, "h")
        assert ok and "tied with" in out
    assert not run(capsys, ex.check_pick, "t", "single positive", values, "h")[0]
    assert not run(capsys, ex.check_pick, "t", ["known 10 %", "positives only 10 %"], values, "h")[0]


#: per notebook, the record each "which row leads" exercise reads (``{row: value}``), and the rows
#: it leaves out
PICKS = {
    "00_partial_labels": ("an_false_negative_rate", ()),          # Exercise 3, check_pick
    "01_assume_negative": ("gap", ()),                             # Exercise 3, check_top_mean
    "02_gr_loss": ("mAP", ("full labels",)),                       # Exercise 4, check_top_mean
    "04_cls": ("margin_over_AN", ()),                              # Exercise 3, check_top_mean
}


def _executed_cpu(stem):
    """The executed notebook ``stem`` of a cpu report among the folders $MLPL_LAB_REPORTS names
    (CI: the pack-served cpu report), else skip."""
    import os
    from pathlib import Path

    from mlpl_lab.reporting.report import read_records

    for folder in [Path(p) for p in os.environ.get("MLPL_LAB_REPORTS", "").split(os.pathsep) if p]:
        path = folder / f"{stem}.ipynb"
        if path.exists():
            records = read_records(path)
            if "cpu" in folder.parts[-1]:
                return records
    pytest.skip("no executed cpu report given: set MLPL_LAB_REPORTS to the folder `mlpl-lab report "
                "--profile cpu` wrote")


@pytest.mark.reports
@pytest.mark.parametrize("stem", sorted(PICKS))
def test_each_pick_exercise_has_one_answer_on_the_shipped_pack_or_accepts_the_ties(stem, capsys):
    """On the pack-served cpu values (the executed report's records): a "top and runner-up"
    exercise needs its first two rows distinct from each other and from the third, or its ✓
    would depend on a sort's tie-break; a single pick may tie, and then every tied row passes
    (check_pick) and every other row fails."""
    key, exclude = PICKS[stem]
    recorded = _executed_cpu(stem).get(key)
    assert isinstance(recorded, dict), f"{stem}: no record {key!r}"
    values = {k: float(v) for k, v in recorded.items() if k not in exclude}
    assert len(values) >= 2, (stem, values)
    ordered = sorted(values.values(), reverse=True)
    if stem == "00_partial_labels":
        top = [k for k, v in values.items() if v == ordered[0]]
        for k in values:
            assert run(capsys, ex.check_pick, "t", k, values, "h")[0] == (k in top), k
    else:
        lead = ordered[:3]  # the top, the runner-up and (where there is one) the row after them
        assert len(set(lead)) == len(lead), f"{stem}: the leading rows tie on the pack: {values}"


def test_a_check_states_the_reference_answer_to_instructors_only(capsys, monkeypatch):
    """The reference answer (the value the library computes, the count of holding claims, the
    record's value of the picked row) is printed where $MLPL_LAB_ANSWERS is ``instructor`` and
    nowhere else: a student's ✓ says only that the answer is right. Oracle: AN's loss on an unknown
    entry scored 0.9 is -ln(1 - 0.9) = 2.302585."""
    claims = {"a beats b": {"verdict": "holds"}, "c beats d": {"verdict": "inconclusive"}}
    values = {"single positive": 0.0953, "known 10 %": 0.12827}

    def lines():
        assert ex.check_an_penalty(2.3026, p=0.9)
        assert ex.check_claims_that_hold(["a beats b"], claims)
        assert ex.check_pick("t", "known 10 %", values, "h")
        return capsys.readouterr().out

    for unset_or_other in (None, "student", "yes"):
        if unset_or_other is None:
            monkeypatch.delenv(ex.ANSWERS_ENV, raising=False)
        else:
            monkeypatch.setenv(ex.ANSWERS_ENV, unset_or_other)
        out = lines()
        assert [line[0] for line in out.splitlines()] == ["✓"] * 3, out
        assert "you said 2.303" in out and "2.30259" not in out and "reference gives" not in out
        assert "1 of 2 claims" not in out and "0.128" not in out
    monkeypatch.setenv(ex.ANSWERS_ENV, "instructor")
    out = lines()
    assert "the reference gives 2.303, you said 2.303" in out
    assert "1 of 2 claims hold in this run" in out and "known 10 %: 0.128" in out
