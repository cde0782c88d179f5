"""The pretrained start: a pretraining run stored like any other, named in every dependent spec,
whose backbone (and only its backbone) each run starts from, with a freshly initialised head."""
from __future__ import annotations

import pytest
import torch

from mlpl_lab.runs import ensure, ensure as run_ensure, splits_cache
from mlpl_lab.runs import ensure, splits_cache, store
from mlpl_lab.profiles import get_profile


@pytest.fixture
def data_root(tmp_path, monkeypatch):
    monkeypatch.setenv("MLPL_LAB_DATA", str(tmp_path))
    monkeypatch.delenv(store.FRESH_ENV, raising=False)
    splits_cache.clear_caches()
    return tmp_path


def tiny(**kw):
    pre = {"glyphs": "digits", "max_objects": 1, "n_train": 64, "n_val": 32, "n_test": 32, "epochs": 1,
           "seed": 1000}
    fields = dict(n_train=64, n_val=32, n_test=32, epochs=1, batch_size=32, model_kwargs={"width": 8},
                  seeds=[0, 1], pretrain=pre) | kw
    return get_profile("smoke", **fields)


def state(module):
    return {k: v.detach().clone() for k, v in module.state_dict().items()}


def same(a, b):
    return a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)


def test_every_spec_names_the_pretraining_run_and_its_key_follows_it():
    P = tiny()
    spec = P.spec("an")
    pre = spec.backbone_from
    assert pre is not None and pre.method == "full" and pre.regime == "full"
    assert pre.data["glyphs"] == "digits" and pre.data["max_objects"] == 1
    assert pre.seed == 1000 and pre.seed not in P.seeds  # its own seed, disjoint from the splits
    assert pre.backbone_from is None and "head" not in pre.train["model_kwargs"]
    longer = tiny(pretrain=dict(P.pretrain, epochs=2)).spec("an")
    assert longer.key != spec.key  # a different pretraining run is a different run
    assert tiny(init="scratch").spec("an").backbone_from is None
    # a second stage starts from its first stage, not from the pretraining run
    stage2 = P.spec("an", init_from=spec)
    assert stage2.backbone_from is None and stage2.init_from.backbone_from == pre
    # a head option does not change the backbone the run pretrains
    lq = P.spec("an", model_kwargs={"width": 8, "head": "label_query"})
    assert lq.backbone_from == pre


def test_only_the_backbone_is_copied_and_the_head_is_fresh(data_root):
    P = tiny()
    spec = P.spec("an", seed=1)
    pre_run = ensure.ensure([spec.backbone_from])[0]
    pretrained = pre_run.method.net
    start = ensure.initial_method(spec).net
    scratch = ensure.initial_method(tiny(init="scratch").spec("an", seed=1)).net
    assert same(state(start.backbone), state(pretrained.backbone))
    assert not same(state(start.backbone), state(scratch.backbone))
    # the head is what the seed initialises without pretraining (the pretraining head has 10
    # digit classes; the run's has the scenes' 20)
    assert same(state(start.head), state(scratch.head))
    assert pretrained.head.fc.out_features == 10 and start.head.fc.out_features == 20


def test_a_trained_run_started_from_the_backbone_and_stored_it_once(data_root, monkeypatch):
    calls = []
    real = run_ensure.fit

    def counting(*a, **k):
        calls.append((a[0].name if hasattr(a[0], "name") else a[0], k.get("backbone_from") is not None))
        return real(*a, **k)

    monkeypatch.setattr(run_ensure, "fit", counting)
    P = tiny()
    runs = ensure.ensure([P.spec("an", seed=0), P.spec("gr", seed=0)])
    assert [c[1] for c in calls] == [False, True, True]  # the pretraining run, then two runs from it
    assert len(list(store.RunStore().keys())) == 3
    assert all(isinstance(r.converged, bool) for r in runs)
    assert runs[0].summary["convergence"]["criterion"].startswith("val mAP gained")


def test_two_network_methods_get_the_backbone_in_both_networks(data_root):
    P = tiny()
    spec = P.spec("coteaching")
    pretrained = ensure.ensure([spec.backbone_from])[0].method.net
    method = ensure.initial_method(spec)
    nets = method.networks()
    assert len(nets) == 2
    for net in nets.values():
        assert same(state(net.backbone), state(pretrained.backbone))


def test_lgconv_backbones_take_the_pretrained_weights_into_the_wrapped_convolution(data_root):
    P = tiny()
    spec = P.spec("pu_mlc", model_kwargs={"width": 8, "lgconv": True}, regime="positives_only",
                  regime_params={"p": 0.5})
    pretrained = state(ensure.ensure([spec.backbone_from])[0].method.net.backbone)
    bb = state(ensure.initial_method(spec).net.backbone)
    wrapped = [k for k in pretrained if k not in bb]
    assert wrapped, "the test needs at least one LgConv-wrapped convolution"
    for k in pretrained:
        head, _, leaf = k.rpartition(".")
        target = k if k in bb else f"{head}.conv.{leaf}"
        assert torch.equal(bb[target], pretrained[k]), k


def test_an_architecture_mismatch_is_refused_with_the_fix(data_root):
    from mlpl_lab.engine.train import init_backbones

    P = tiny()
    pre = ensure.ensure([P.spec("an").backbone_from])[0].method
    other = ensure.initial_method(tiny(init="scratch", model_kwargs={"width": 4}).spec("an"))
    with pytest.raises(ValueError, match="not the pretrained backbone's architecture"):
        init_backbones(other, pre)


def test_profile_init_is_checked():
    with pytest.raises(ValueError, match="init must be one of"):
        get_profile("smoke", init="imagenet1k")
    with pytest.raises(ValueError, match="pretrain="):
        get_profile("smoke", pretrain={"glyphs": "digits"})
    with pytest.raises(ValueError, match="weights"):
        get_profile("smoke", init="imagenet")
    assert get_profile("smoke", init="scratch", pretrain={}).spec("an").backbone_from is None


def test_a_real_dataset_starts_from_imagenet_on_gpu_and_from_scratch_elsewhere(tmp_path, monkeypatch):
    from mlpl_lab.protocol.common import describe_start, with_dataset

    monkeypatch.setenv("TORCH_HOME", str(tmp_path / "torch"))  # an empty weights cache
    gpu = with_dataset("gpu", "voc2012", root=str(tmp_path))
    assert gpu.init == "imagenet" and gpu.model_kwargs["weights"] == "IMAGENET1K_V1"
    assert gpu.spec("an").backbone_from is None
    note = describe_start(gpu)
    assert "NOT in the local cache" in note and str(tmp_path / "torch") in note
    cached = tmp_path / "torch" / "hub" / "checkpoints"
    cached.mkdir(parents=True)
    (cached / "resnet50-0676ba61.pth").write_bytes(b"")
    assert "cached at" in describe_start(gpu)
    cpu = with_dataset("cpu", "voc2012", root=str(tmp_path))
    assert cpu.init == "scratch" and cpu.spec("an").backbone_from is None
    assert describe_start("cpu").startswith("the lab's pretrained backbone")
