"""Keys per component (issue 51): bumping one component's version re-keys exactly the runs that
use it, and the runs that start from them, and nothing else.

Oracle: the components of each spec below are listed here by hand (what each run's method,
model, head and data are, and the pretraining run every pretrained run starts from), not by
:mod:`mlpl_lab.runs.components`; for every component of the table, the runs whose keys change
when it alone is bumped must be exactly those whose hand-written list holds it."""
from __future__ import annotations

import pytest

from mlpl_lab.core import numerics
from mlpl_lab.methods.registry import METHODS
from mlpl_lab.models.factory import MODELS
from mlpl_lab.models.heads import HEADS
from mlpl_lab.profiles import get_profile
from mlpl_lab.runs import components
from mlpl_lab.runs.spec import RunSpec

BASE = {"engine", "data.scenes", "data.regimes", "model.small_cnn", "head.linear"}
PRE = BASE | {"method.basic"}  # the pretraining run: the full-label oracle's BCE


def cases():
    """(name, spec, the components it uses, written by hand)."""
    P = get_profile("smoke")  # init="pretrained": every run starts from the pretraining run
    S = get_profile("smoke", init="scratch")
    lq = {"head": "label_query", "head_kwargs": {"dropout": 0.0, "ffn_mult": 2}, "width": 8}
    boost = {"head": "boostlu", "head_kwargs": {"alpha": 5.0}, "width": 8}
    lac1 = P.spec("lac_plc", model_kwargs=lq)
    lac2 = P.spec("lac", init_from=lac1, model_kwargs=lq)
    real = S.spec("an").replace(data={"dataset": "voc2012", "root": "/nowhere", "layout": "cole"})
    return [
        ("pretraining", P.pretrain_spec(), PRE),
        ("AN", P.spec("an"), PRE),
        ("AN from scratch", S.spec("an"), BASE | {"method.basic"}),
        ("GR Loss", P.spec("gr"), PRE | {"method.gr"}),
        ("GR ablation", P.spec("gr_k_only"), PRE | {"method.gr"}),
        ("WAN", S.spec("wan"), BASE | {"method.cole"}),
        ("ASL", S.spec("asl"), BASE | {"method.robust"}),
        ("EM", P.spec("em"), PRE | {"method.entropy"}),
        ("EM+APL", S.spec("em_apl"), BASE | {"method.apl"}),
        ("ZLPR", S.spec("zlpr"), BASE | {"method.opml"}),
        ("OPML-SP", S.spec("opml_sp"), BASE | {"method.opml"}),
        ("CLS", P.spec("cls"), PRE | {"method.cls"}),
        ("JoCoR", S.spec("jocor"), BASE | {"method.coteaching"}),
        ("LL-R", S.spec("ll_r"), BASE | {"method.large_loss"}),
        # BoostLU's head from scratch: no linear head anywhere; pretrained: the pretraining run's
        ("LL-R + BoostLU", S.spec("ll_r", model_kwargs=boost),
         BASE - {"head.linear"} | {"method.large_loss", "head.boostlu"}),
        ("LL-Cp + BoostLU, pretrained", P.spec("ll_cp", model_kwargs=boost),
         PRE | {"method.large_loss", "head.boostlu"}),
        ("LAC stage 1", lac1, PRE | {"method.lac", "head.label_query"}),
        ("LAC stage 2", lac2, PRE | {"method.lac", "head.label_query"}),
        ("PU-MLC, LgConv", S.spec("pu_mlc", model_kwargs={"width": 8, "lgconv": True}),
         BASE | {"method.pu_mlc", "model.lgconv"}),
        ("partial BCE", S.spec("partial_bce"), BASE | {"method.partial"}),
        ("AN on resnet18", S.spec("an", model="resnet18", model_kwargs={}),
         {"engine", "data.scenes", "data.regimes", "model.resnet", "head.linear", "method.basic"}),
        ("AN on a real dataset", real,
         {"engine", "data.real", "data.regimes", "model.small_cnn", "head.linear", "method.basic"}),
    ]


def test_the_components_of_each_run_are_those_written_by_hand():
    for name, spec, want in cases():
        assert set(components.components(spec)) == want, name


@pytest.mark.parametrize("bumped", sorted(numerics.VERSIONS))
def test_a_bump_rekeys_exactly_the_runs_that_use_the_component(bumped, monkeypatch):
    """Bug caught: a fix in one family re-keying (retraining) every run, or a bump that misses a
    run using the component (a stale run served), or one starting from it (LAC's stage 2)."""
    runs = cases()
    before = {name: spec.key for name, spec, _ in runs}
    monkeypatch.setitem(numerics.VERSIONS, bumped, numerics.VERSIONS[bumped] + 1)
    changed = {name for name, spec, _ in runs if spec.key != before[name]}
    assert changed == {name for name, _, uses in runs if bumped in uses}
    assert all(len(spec.key) == 20 and int(spec.key, 16) >= 0 for _, spec, _ in runs)


def test_a_run_follows_the_key_of_the_run_it_starts_from(monkeypatch):
    """Bug caught: a stage two (or a pretrained run) kept after the run it starts from changed."""
    P = get_profile("smoke")
    lac1 = P.spec("lac_plc")
    lac2 = P.spec("lac", init_from=lac1)
    k2 = lac2.key
    monkeypatch.setitem(numerics.VERSIONS, "method.basic", numerics.VERSIONS["method.basic"] + 1)
    assert lac2.key != k2  # only the pretraining run uses method.basic; lac2 starts from it


def test_every_registered_method_model_and_head_has_a_version():
    """Bug caught: a new method module, model or head without its line in VERSIONS (its runs
    would fail to key at the first use)."""
    for method in METHODS:
        assert components.method_family(method) in numerics.VERSIONS, method
    for model in MODELS:
        assert components._model_component(model) in numerics.VERSIONS, model
    for head in HEADS:
        assert f"head.{head}" in numerics.VERSIONS, head


def test_a_component_without_a_version_is_named(monkeypatch):
    spec = get_profile("smoke", init="scratch").spec("gr")
    monkeypatch.delitem(numerics.VERSIONS, "method.gr")
    with pytest.raises(components.UnknownComponentError, match=r"\['method.gr'\].*add a line"):
        spec.key
    with pytest.raises(ValueError, match="unknown component 'method.nope'.*engine"):
        components.check_component("method.nope")


def test_the_key_round_trips_through_json():
    for _, spec, _ in cases():
        assert RunSpec.from_dict(spec.as_dict()).key == spec.key
