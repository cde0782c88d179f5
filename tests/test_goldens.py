"""The numerics version is guarded: short smoke runs retrained now must equal their golden records.

Bug caught: a change that alters what runs compute (a loss, the data a seed draws, the loop's
order of operations) landing without a bump of ``NUMERICS_VERSION``, so the store and the
shipped course pack would serve runs the code no longer computes."""
from __future__ import annotations

import pytest

import goldens
from mlpl_lab.core.numerics import NUMERICS_VERSION

FIX = ("bump NUMERICS_VERSION in mlpl_lab/core/numerics.py, regenerate the goldens (python "
       "tests/goldens.py --write) and the course pack (the cold cpu series), and say why in the commit")


@pytest.fixture(scope="module")
def stored():
    return goldens.load()


@pytest.fixture(scope="module")
def retrained(stored):
    return goldens.retrain(stored)


def test_the_goldens_belong_to_this_numerics_version(stored):
    assert stored["numerics_version"] == NUMERICS_VERSION, (
        f"tests/goldens/records.json was made at numerics version {stored['numerics_version']}, the "
        f"code is at {NUMERICS_VERSION}: regenerate them (python tests/goldens.py --write)")


def test_the_goldens_cover_every_family(stored):
    """Bug caught: a golden set that silently lost a family (a method's numerics unguarded)."""
    methods = {r["spec"]["method"] for r in stored["runs"].values()}
    assert {"full", "an", "gr", "opml_sp", "cls", "em", "ll_r", "lac_plc", "lac", "pu_mlc"} <= methods
    stage2 = [r for r in stored["runs"].values() if r["spec"]["init_from"] is not None]
    assert stage2 and all(r["spec"]["init_from"] in [s["spec"] for s in stored["runs"].values()]
                          for r in stage2)


def test_retrained_runs_equal_their_goldens(stored, retrained):
    bitwise = {k: goldens.environment()[k] for k in goldens.BITWISE_FIELDS} == \
        {k: stored["environment"].get(k) for k in goldens.BITWISE_FIELDS}
    diffs = goldens.differences(stored, retrained, bitwise)
    how = ("bitwise (this environment matches the goldens')" if bitwise else
           f"within {goldens.TOLERANCE} (this environment {goldens.environment()} differs from the "
           f"goldens' {stored['environment']})")
    assert not diffs, (f"{len(diffs)} numbers differ from the golden records, compared {how}:\n  "
                       + "\n  ".join(diffs[:12]) + f"\nThe change alters what runs compute: {FIX}.")


def test_the_comparison_catches_one_changed_number(stored):
    """Bug caught: a comparison that could not fail (the oracle: one number nudged by hand)."""
    import copy

    nudged = copy.deepcopy(stored["runs"])
    name = next(iter(nudged))
    key = next(k for k in nudged[name]["history"][-1] if "loss" in k or "mAP" in k)
    nudged[name]["history"][-1][key] += 1e-9 + abs(nudged[name]["history"][-1][key]) * 1e-12
    assert goldens.differences(stored, nudged, bitwise=True)
    assert not goldens.differences(stored, nudged, bitwise=False)
    nudged[name]["history"][-1][key] += 10.0
    assert goldens.differences(stored, nudged, bitwise=False)
