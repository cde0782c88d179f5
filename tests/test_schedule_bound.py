"""Schedule-bound runs (issue 52): a method whose targets follow a schedule to the last epoch
(GR Loss, Eq. 9–13) gets § in the tables, not †; † stays for a run unconverged for another reason."""
from types import SimpleNamespace

from mlpl_lab.analysis.benchmark import convergence_mark
from mlpl_lab.analysis.display import interval_text
from mlpl_lab.methods.gr import SCHEDULE_BOUND


def run(method, converged):
    return SimpleNamespace(spec=SimpleNamespace(method=method, seed=0), converged=converged)


def test_which_methods_are_schedule_bound():
    # by hand from Eq. 9–13: k̂ (w, b) and v (μ, σ) move with the epoch; the robust terms alone do not
    assert {"gr", "gr_all", "gr_k_only", "gr_v_only", "gr_k_v", "gr_k_robust", "gr_v_robust"} == SCHEDULE_BOUND
    assert "gr_none" not in SCHEDULE_BOUND and "gr_robust_only" not in SCHEDULE_BOUND


def test_the_mark_names_the_reason():
    assert convergence_mark([run("gr", True), run("gr", True)]) is False
    assert convergence_mark([run("gr", False), run("gr", True)]) == "schedule-bound"
    assert convergence_mark([run("an", False), run("an", True)]) is True
    assert convergence_mark([run("gr", False), run("an", False)]) is True  # a cell mixing reasons
    assert interval_text(80.0, 1.0, 3, "schedule-bound") == "80.0 ± 1.0 (3) §"
    assert interval_text(80.0, 1.0, 3, True) == "80.0 ± 1.0 (3) †"
    assert interval_text(80.0, 1.0, 3, False) == "80.0 ± 1.0 (3)"


def _runs(method, values, converged=True, epochs=20):
    return [SimpleNamespace(spec=SimpleNamespace(method=method, seed=s, train={"epochs": epochs}),
                            best={"test_mAP": v, "val_mAP": v}, converged=converged,
                            convergence={"converged": converged}) for s, v in zip((1, 2, 3, 4, 5), values)]


def test_gr_claims_say_whether_the_length_check_agrees():
    """By hand: GR leads AN by ~10 at both lengths (the check agrees); against EM GR leads at the
    profile's length but trails at the longer one (the check disagrees); the ablation row has no
    check. GR's runs are unconverged and schedule-bound, so every GR claim carries §."""
    from mlpl_lab.analysis.claims import claims_record, takeaways
    from mlpl_lab.chapters import gr

    results = {"GR": _runs("gr", [80, 81, 79, 80.5, 80.2], converged=False),
               "AN": _runs("an", [70, 71, 70.5, 69, 70]), "EM": _runs("em", [75, 74, 75.5, 74.8, 75.1])}
    long = {"GR": _runs("gr", [82, 83, 81, 82.5, 82.2], converged=False, epochs=27),
            "AN": _runs("an", [72, 73, 71, 72.2, 71.9], epochs=27),
            "EM": _runs("em", [90, 91, 90.5, 89.9, 90.2], epochs=27)}
    ablation = {"k̂": _runs("gr_k_only", [78, 79, 77, 78.5, 78.2], converged=False)}
    table = gr.claims(results, ablation, long)
    rec = claims_record(table)
    assert rec["GR beats AN (single positive)"]["schedule_bound"] == "schedule-bound; the length check agrees"
    em = rec["GR beats the best other zoo method (EM)"]
    assert em["verdict"] == "holds" and em["schedule_bound"].startswith("schedule-bound; the length check disagrees")
    assert rec["GR (all on) beats the ablation row 'k̂'"]["schedule_bound"].endswith("does not cover this row")
    assert rec["GR beats AN with both trained 27 epochs (length check)"]["schedule_bound"] is None
    assert "§ schedule-bound; the length check agrees" in takeaways(table)


def test_converged_gr_runs_carry_no_schedule_mark():
    from mlpl_lab.analysis.claims import claims_record
    from mlpl_lab.chapters import gr

    results = {"GR": _runs("gr", [80, 81, 79, 80.5, 80.2]), "AN": _runs("an", [70, 71, 70.5, 69, 70])}
    rec = claims_record(gr.claims(results, {}, None))
    assert all(v["schedule_bound"] is None for v in rec.values())
