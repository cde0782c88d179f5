"""07 says why a comparison another chapter reads as holding is inconclusive here: its family's
size. Oracle: intervals worked by hand (t quantiles from scipy, not the package)."""
from __future__ import annotations

from scipy import stats

from mlpl_lab.analysis.claims import Claim, Family, claims_table
from mlpl_lab.chapters.benchmark.claims import family_size_notes


def test_a_claim_its_familys_size_leaves_undecided_gets_its_sentence():
    # diffs 1.0, 1.2, 0.8 on seeds 1-3: mean 1.0, s = 0.2, se = 0.2 / sqrt(3)
    se = 0.2 / 3 ** 0.5
    lo95 = 1.0 - stats.t.ppf(0.975, 2) * se
    lo_fw = 1.0 - stats.t.ppf(1 - 0.05 / 8, 2) * se
    assert lo95 > 0 > lo_fw  # holds alone, inconclusive among 4
    fam = Family("single positive", 4, "which methods beat AN?")
    a = {1: 81.0, 2: 81.2, 3: 80.8}
    b = {1: 80.0, 2: 80.0, 3: 80.0}
    clear = {1: 85.0, 2: 85.1, 3: 84.9}
    table = claims_table([Claim.of_values("X beats AN under single positive", "", "X", "AN", a, b, family=fam),
                          Claim.of_values("Y beats AN under single positive", "", "Y", "AN", clear, b, family=fam)])
    notes = family_size_notes(table)
    assert len(notes) == 1 and notes[0].startswith("* *X beats AN under single positive*")
    assert f"[{lo95:+.2f}," in notes[0] and "m = 4" in notes[0] and f"[{lo_fw:+.2f}," in notes[0]
