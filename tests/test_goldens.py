"""The numerics versions are guarded: short smoke runs retrained now must equal their golden records.

Bug caught: a change that alters what runs compute (a loss, the data a seed draws, the loop's
order of operations) landing without a bump of the version of the component it changes
(``VERSIONS`` in mlpl_lab/core/numerics.py), so the store and the shipped course pack would serve
runs the code no longer computes. Each record names the components it guards; a difference
names the ones to bump."""
from __future__ import annotations

import pytest

import goldens
from mlpl_lab.core.numerics import KEY_SCHEME, VERSIONS
from mlpl_lab.runs.components import versions_of
from mlpl_lab.runs.spec import RunSpec


def fix(components) -> str:
    return (f"bump the version of {' or '.join(components)} in mlpl_lab/core/numerics.py VERSIONS (the "
            "component whose computation changed), regenerate the goldens (python tests/goldens.py "
            "--write), retrain the runs it re-keys (`mlpl-lab plan --bump NAME` counts them) and the "
            "course pack, and say why in the commit")


@pytest.fixture(scope="module")
def stored():
    return goldens.load()


@pytest.fixture(scope="module")
def retrained(stored):
    return goldens.retrain(stored)


def test_the_goldens_belong_to_these_versions(stored):
    """Bug caught: a version bumped without regenerating the records it guards (or a record that
    no longer names what it guards)."""
    assert stored["key_scheme"] == KEY_SCHEME
    for name, r in stored["runs"].items():
        want = versions_of(RunSpec.from_dict(r["spec"]))
        assert r["components"] == want, (
            f"golden {name!r} was made at versions {r['components']}, the code is at {want}: "
            "regenerate them (python tests/goldens.py --write)")


def test_every_method_family_and_model_of_the_goldens_is_guarded(stored):
    """Bug caught: a component whose version no golden guards among those the goldens claim (the
    oracle: the families listed here by hand, one per golden method)."""
    guarded = set().union(*(r["components"] for r in stored["runs"].values()))
    assert {"engine", "data.scenes", "data.regimes", "model.small_cnn", "head.linear", "head.label_query",
            "method.basic", "method.gr", "method.opml", "method.cls", "method.entropy", "method.large_loss",
            "method.lac", "method.pu_mlc", "method.crisp", "method.cardinality"} <= guarded <= set(VERSIONS)


def test_the_goldens_cover_every_family(stored):
    """Bug caught: a golden set that silently lost a family (a method's numerics unguarded)."""
    methods = {r["spec"]["method"] for r in stored["runs"].values()}
    assert {"full", "an", "gr", "opml_sp", "cls", "em", "ll_r", "lac_plc", "lac", "pu_mlc",
            "crisp", "cardinality"} <= methods
    stage2 = [r for r in stored["runs"].values() if r["spec"]["init_from"] is not None]
    assert stage2 and all(r["spec"]["init_from"] in [s["spec"] for s in stored["runs"].values()]
                          for r in stage2)


def test_retrained_runs_equal_their_goldens(stored, retrained):
    bitwise = {name: goldens.bitwise_here(stored, name) for name in stored["runs"]}
    diffs = goldens.differences(stored, retrained, bitwise)
    exact = sorted(n for n, b in bitwise.items() if b)
    how = (f"bitwise where this environment matches the record's ({exact or 'none'}), elsewhere within "
           f"{goldens.TOLERANCE} (this environment: {goldens.environment()})")
    bad = goldens.failing(stored, retrained, bitwise)
    culprits = goldens.suspects(stored, bad) or sorted(set().union(*(stored["runs"][n]["components"]
                                                                    for n in bad)) if bad else [])
    assert not diffs, (f"{len(diffs)} numbers differ from the golden records {bad}, compared {how}:\n  "
                       + "\n  ".join(diffs[:12]) + f"\nThe change alters what runs compute: {fix(culprits)}.")


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


def test_a_difference_names_the_component_to_bump(stored):
    """Bug caught: a failure that cannot say which version to bump. Oracle: one record nudged by
    hand; its family is the one component no other record guards (LAC's two stages: its family and
    its head); every record nudged names every component they guard."""
    import copy

    for name, family in (("GR Loss", "method.gr"), ("PU-MLC", "method.pu_mlc"), ("EM", "method.entropy")):
        nudged = copy.deepcopy(stored["runs"])
        nudged[name]["history"][-1]["val_mAP"] += 1.0
        assert goldens.failing(stored, nudged, bitwise=True) == [name]
        assert goldens.suspects(stored, [name]) == [family]
    assert goldens.suspects(stored, ["LAC stage 1 (+PLC)", "LAC stage 2"]) == ["head.label_query", "method.lac"]
    assert goldens.suspects(stored, list(stored["runs"])) == sorted(
        ["engine", "data.scenes", "data.regimes", "model.small_cnn", "head.linear", "method.basic",
         "head.label_query", "method.cls", "method.entropy", "method.gr", "method.lac", "method.large_loss",
         "method.opml", "method.pu_mlc", "method.crisp", "method.cardinality"])
    for name, family in (("Crisp", "method.crisp"), ("label cardinality (P(k))", "method.cardinality")):
        assert goldens.suspects(stored, [name]) == [family]


def test_a_record_is_compared_bitwise_only_where_it_was_made(stored):
    """Bug caught: a record added on another machine compared bitwise against the file's
    environment (it would fail everywhere but there), or every record compared at the tolerance
    (a changed last bit unnoticed where it could be seen). Oracle: this machine's environment and
    one with another CPU, written here by hand."""
    import copy

    here = goldens.environment()
    elsewhere = dict(here, cpu="family 0 model 0 stepping 0; cache 1 KB; none")
    runs = copy.deepcopy(stored["runs"])
    a, b = list(runs)[:2]
    runs[a]["environment"], runs[b]["environment"] = here, elsewhere
    both = {"environment": elsewhere, "runs": {a: runs[a], b: runs[b]}}
    assert goldens.bitwise_here(both, a) is True and goldens.bitwise_here(both, b) is False
    runs[b].pop("environment")
    assert goldens.bitwise_here(both, b) is False  # the file's environment, another CPU
    both["environment"] = here
    assert goldens.bitwise_here(both, b) is True
    nudged = copy.deepcopy(both["runs"])
    for name in (a, b):
        key = next(k for k in nudged[name]["history"][-1] if "mAP" in k)
        nudged[name]["history"][-1][key] += 1e-6
    assert goldens.failing(both, nudged, {a: True, b: False}) == [a]
    assert goldens.failing(both, nudged, {a: False, b: True}) == [b]
