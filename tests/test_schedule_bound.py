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
