"""Longer runs for verdicts at risk: designed in the cpu designs (04's co-training rows, 05's
end-to-end rows, 06's partial BCE), never asked for as runs a notebook trains, and read as controls
of the claims they repeat once stored. Oracles: the specs written out by hand from the chapters'
own rows with only the epochs changed; hand-made runs for the claims."""
from __future__ import annotations

from types import SimpleNamespace

import pytest

from mlpl_lab.analysis.claims import claims_record
from mlpl_lab.chapters import cls, lac, pu_mlc
from claims_oracle import by_sentence


def _same_but_epochs(longer, base, epochs):
    assert [s.train["epochs"] for s in longer] == [epochs] * len(base)
    assert [s.replace(train=dict(s.train, epochs=b.train["epochs"])).key for s, b in zip(longer, base)] == \
        [b.key for b in base]
    assert {s.key for s in longer}.isdisjoint({b.key for b in base})


def test_the_cpu_designs_ask_for_longer_runs_of_the_losing_sides_only_as_pending():
    d = lac.design("cpu")
    (label, longer), = lac.longer_specs(d)[lac.LONGER].items()
    base = [lac.row_spec(d.profile, "+LAC end-to-end", s, d.regime, None, d) for s in d.seeds]
    _same_but_epochs(longer, base, 2 * d.stage1_epochs)
    now = {s.key for s in lac.specs(d).flat()}
    assert now.isdisjoint({s.key for s in longer})  # a notebook never trains them by default
    c = cls.design("cpu")
    got = cls.longer_specs(c)[cls.LONGER]
    assert set(got) == {"Co-teaching (72 epochs)", "Co-teaching+ (72 epochs)"}
    table = cls.specs(c).now["single positive"]
    _same_but_epochs(got["Co-teaching+ (72 epochs)"], table["Co-teaching+"], 72)
    assert {s.key for s in cls.specs(c).flat()}.isdisjoint({s.key for v in got.values() for s in v})
    p = pu_mlc.design("cpu")
    got = pu_mlc.longer_specs(p)[pu_mlc.LONGER]
    stored = pu_mlc.specs(p, lambda s: None)
    _same_but_epochs(got["partial BCE (128 epochs) at fn_rate 0.1"], stored.now["fn_rate=0.1"][pu_mlc.PBCE], 128)
    # the other designs design none
    assert lac.longer_specs(lac.design("smoke")) == {} and cls.longer_specs(cls.design("gpu")) == {}


def _runs(values, converged=True):
    return [SimpleNamespace(spec=SimpleNamespace(seed=s), best={"test_mAP": v}, converged=converged)
            for s, v in enumerate(values)]


def test_a_claim_at_risk_waits_for_its_longer_runs_then_reads_them_as_its_control():
    """05 by hand: PLC beats the unconverged end-to-end rows by ~5 (at risk); without the longer
    runs the claim says it waits for them; with them, a control of the claim holds or not on them."""
    d = lac.design("cpu")
    r = {label: _runs([70, 71, 72, 71, 70]) for label in lac.ROWS}
    r[lac.CONTROL] = _runs([70, 71, 72, 71, 70])
    r["+PLC"] = _runs([75, 76, 77, 76, 75.5])
    r["+LAC end-to-end"] = _runs([70, 71, 71.5, 70.5, 70.2], converged=False)
    e2e = "end-to-end LAC is worse than PLC (PLC beats it)"
    rec = by_sentence(claims_record(lac.claims(r, d)))
    assert rec[e2e]["at_risk"] and rec[e2e]["waiting_for"].startswith("its control, +LAC end-to-end (56 epochs)")
    longer = {"+LAC end-to-end (56 epochs)": _runs([75.2, 76.1, 76.8, 76.2, 75.4])}
    rec = by_sentence(claims_record(lac.claims(r, d, longer)))
    ctl = rec["PLC beats +LAC end-to-end (56 epochs)"]
    # the control sits in the claim's family (05's ablations: m = 6 declared) and is counted in its m
    assert ctl["control_of"] == rec[e2e]["id"] and ctl["kind"] == "control"
    assert ctl["family"] == rec[e2e]["family"] and ctl["family_size"] == rec[e2e]["family_size"] == 6 + 1
    assert ctl["verdict"] == "inconclusive" and rec[e2e]["waiting_for"] is None
    # the control decides with its claim: PLC leads by ~5.3 on every seed (holds alone), trained
    # longer the end-to-end rows catch up (the control's interval reaches 0)
    assert rec[e2e]["verdict_alone"] == "holds"
    assert rec[e2e]["verdict"] == "inconclusive (its control is inconclusive)"


def test_05s_ablation_rows_are_one_family():
    """Table 3's six ablation rows answer one question: one family, m = 6 (each row's interval at
    level 1 − 0.05/6), and 6 + 1 once the end-to-end rows' control is stored. Oracle: the interval
    of "PLC beats AN" worked from its per-seed differences with scipy's t quantile at that m. Bug
    caught: the rows scattered over five families (m = 1 or 2 each), so scanning six rows for the
    one that moved went uncorrected."""
    import math

    from scipy import stats

    d = lac.design("cpu")
    r = {label: _runs([70, 71, 72, 71, 70]) for label in lac.ROWS}
    r[lac.CONTROL] = _runs([70, 71, 72, 71, 70])
    r["+PLC"] = _runs([71, 71.5, 73, 71.2, 70.9])
    r["+LAC end-to-end"] = _runs([70, 71, 71.5, 70.5, 70.2], converged=False)
    for longer, m in ((None, 6), ({"+LAC end-to-end (56 epochs)": _runs([75.2, 76.1, 76.8, 76.2, 75.4])}, 7)):
        rec = claims_record(lac.claims(r, d, longer))
        found = [c for c in rec.values() if not c["control_of"]]
        assert len(found) == 6 and len({c["family"] for c in rec.values()}) == 1
        assert {c["family_size"] for c in rec.values()} == {m}
        plc = rec["plc_beats_an"]
        diffs = [1.0, 0.5, 1.0, 0.2, 0.9]
        half = stats.t.ppf(1 - 0.05 / (2 * m), 4) * stats.tstd(diffs) / math.sqrt(5)
        assert plc["ci_family"] == pytest.approx([sum(diffs) / 5 - half, sum(diffs) / 5 + half])


def _trained(values, epochs):
    return [SimpleNamespace(spec=SimpleNamespace(seed=s, train={"epochs": epochs}), best={"test_mAP": v},
                            converged=True) for s, v in enumerate(values)]


def test_06s_sentences_state_the_epochs_its_runs_trained_and_call_equal_only_what_is():
    """06 by hand: the protocol reads PU-MLC at the sweep's p longer than the design's 128 (its
    pilot gained), while partial BCE's control stays at 128. Oracle: the epochs written on the
    hand-made runs. Bug caught: the sentences took the design's epochs, so the control read
    "equal epochs: both 128" while PU-MLC's runs had trained 171."""
    d = pu_mlc.design("cpu")
    low = {label: _trained([60, 61, 62, 61, 60], d.epochs_of("pu_mlc"))
           for label in (*pu_mlc.GAMMA_ROWS, pu_mlc.LABEL.vpu)}
    low[pu_mlc.LABEL.partial_bce_row] = _trained([55, 56, 57, 56, 55], d.epochs)
    pu171 = _trained([86, 86.5, 86.2, 85.9, 86.1], 171)
    ladders = {"p=0.1": low, f"p={d.sweep_p}": {pu_mlc.LABEL.pu_mlc_row: pu171,
                                                 pu_mlc.LABEL.partial_bce_row: _trained([82, 82.5, 82, 82.4, 82.1], d.epochs)}}
    sweep = {0.0: {pu_mlc.PU: pu171, pu_mlc.PBCE: ladders[f"p={d.sweep_p}"][pu_mlc.LABEL.partial_bce_row],
                   pu_mlc.CONTROL: _trained([82, 82.5, 82, 82.4, 82.1], d.epochs)},
             0.1: {pu_mlc.PU: _trained([77, 77.2, 77.1, 77, 77.3], 128), pu_mlc.PBCE: _trained([68, 68.2, 68, 67.9, 68.1], d.epochs),
                   pu_mlc.CONTROL: _trained([79, 79.2, 79, 79.1, 79.3], d.epochs)}}
    longer = {pu_mlc.longer_label(d, fn): _trained([85.9, 86.0, 86.1, 85.8, 86.0], 128) for fn in (0.0, 0.1)}
    claims = set(pu_mlc.claims(ladders, sweep, d, longer)["claim"])
    clean = f"PU-MLC beats partial BCE (which also reads negatives) at p = {float(d.sweep_p)} (clean negatives)"
    assert f"{clean}, PU-MLC 171 epochs vs partial BCE 54" in claims
    assert f"{clean}, PU-MLC 171 epochs vs partial BCE 128 (the control)" in claims
    assert not any(c.startswith(clean) and "equal epochs" in c for c in claims)
    noisy = "with noisy negatives (fn_rate 0.1) PU-MLC beats partial BCE"
    assert f"{noisy}, equal epochs: both 128 (the control)" in claims and f"{noisy}, PU-MLC 128 epochs vs partial BCE 54" in claims
    # the lesson under the claims and the sweep's column say the same lengths (written by hand)
    text = pu_mlc.epochs_lesson(pu_mlc.claims(ladders, sweep, d, longer), d)
    assert "PU-MLC trains 128 / 171 epochs, partial BCE 54; each control trains partial BCE longer (128 epochs" in text
    assert "With partial BCE trained 128 epochs (PU-MLC 171)" in text and "With partial BCE trained 128 epochs too" in text
    assert "74 more epochs of partial BCE" in text  # 128 − 54, for both controls
    equal = pu_mlc.equal_epochs(d, longer)
    assert pu_mlc.equal_label(d, sweep, equal) == "partial BCE (128 epochs; PU-MLC 128 / 171)"
    assert pu_mlc.equal_label(d, {0.1: sweep[0.1]}, equal) == "partial BCE (128 epochs, as PU-MLC)"
    assert set(pu_mlc.crossings(sweep, _noise(sweep), equal=equal)["baseline"]) == {"partial BCE (128 epochs; PU-MLC 128 / 171)"}


def _noise(sweep):
    """A noise record by hand: ``{fn: {seed: {share}}}``, the share of positives flipped = fn."""
    return {fn: {s: {pu_mlc.SHARE: fn} for s in range(5)} for fn in sweep}


def test_a_control_sentence_names_unequal_epochs_whatever_its_claim_said():
    """Hand-written sentences. Bug caught: a claim whose sides trained as long (nothing said) got
    its control's epochs by ``str.replace("", ...)``, which writes them between every letter."""
    from mlpl_lab.analysis.equal_epochs import equal_sentence

    assert equal_sentence("A beats B", "", 171, 128, "A", "B") == "A beats B, A 171 epochs vs B 128 (the control)"
    assert equal_sentence("A beats B, A 128 epochs vs B 54", ", A 128 epochs vs B 54", 128, 128, "A", "B") == \
        "A beats B, equal epochs: both 128 (the control)"
