"""torchrun / DDP on this CPU machine: gloo, two processes (issue 14).

Oracle: one process taking one step on the union of the ranks' first batches, through the
method's own training step — the distributed code (sampler, DDP wrapper, all-reduce) is what
is under test, so a rank that averaged wrongly, saw overlapping data or skipped the reducer
makes the gradients differ.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

ROOT = Path(__file__).resolve().parent.parent
TORCHRUN = Path(sys.executable).with_name("torchrun")


def _torchrun(args, data_dir, timeout=600):
    env = dict(os.environ, MLPL_LAB_DATA=str(data_dir), MLPL_LAB_PROGRESS="0", OMP_NUM_THREADS="1")
    return subprocess.run([str(TORCHRUN), "--standalone", "--nproc_per_node=2", *args], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def ranks(tmp_path_factory):
    out = tmp_path_factory.mktemp("ddp")
    proc = _torchrun([str(ROOT / "tests" / "ddp_worker.py"), str(out)], out / "data")
    assert proc.returncode == 0, proc.stderr[-3000:]
    return [torch.load(out / f"rank{r}.pt", weights_only=False) for r in (0, 1)]


@pytest.mark.slow  # > 30 s: make test-all, not make test
def test_each_rank_sees_its_own_half_of_the_global_batch(ranks):
    a, b = ranks[0]["first_indices"], ranks[1]["first_indices"]
    assert len(a) == len(b) == 32  # smoke: global batch 64 over 2 ranks
    assert not set(a.tolist()) & set(b.tolist())
    # over the epoch the shards are disjoint too
    assert not set(ranks[0]["all_indices"].tolist()) & set(ranks[1]["all_indices"].tolist())


@pytest.mark.slow  # > 30 s: make test-all, not make test
def test_first_step_gradients_equal_one_process_on_the_global_batch(ranks):
    from mlpl_lab.data.augment import VIEWS
    from mlpl_lab.methods import build_method
    from mlpl_lab.profiles import get_profile
    from mlpl_lab.runs.splits_cache import build_splits
    from mlpl_lab.runs.validation import config_of
    from mlpl_lab.engine.train import prepare

    P = get_profile("smoke")
    spec = P.spec("an", seed=0, epochs=1, probes=[], augment="none",
                  model_kwargs={"width": 8, "norm": "none"})
    splits = build_splits(spec, cache=False)
    method = prepare(build_method("an"), splits.train, config_of(spec, progress=False, device="cpu"))
    method.train(True)
    idx = torch.cat([ranks[0]["first_indices"], ranks[1]["first_indices"]])
    batch = splits.train.get_batch(idx)
    batch["image"] = VIEWS["none"](batch["image"])
    loss, _ = method.training_step(batch, 0)
    loss.backward()
    single = {k: p.grad for k, p in method.net.named_parameters()}
    assert set(single) == set(ranks[0]["grads"])
    for k, g in single.items():
        for r in (0, 1):
            torch.testing.assert_close(ranks[r]["grads"][k], g, rtol=1e-4, atol=1e-6,
                                       msg=lambda m: f"rank {r}, {k}: {m}")
    # and the test can fail: one rank's own (unaveraged) gradient differs from the global one
    method.net.zero_grad()
    half = splits.train.get_batch(ranks[0]["first_indices"])
    method.training_step(half, 0)[0].backward()
    k0 = next(iter(single))
    assert not torch.allclose(method.net.get_parameter(k0).grad, single[k0], rtol=1e-4, atol=1e-6)


@pytest.mark.slow  # > 30 s: make test-all, not make test
def test_learnable_label_state_stays_identical_across_ranks(ranks):
    torch.testing.assert_close(ranks[0]["role"], ranks[1]["role"])
    for k in ranks[0]["role_net"]:
        torch.testing.assert_close(ranks[0]["role_net"][k], ranks[1]["role_net"][k])
    assert torch.equal(ranks[0]["ll_cp"], ranks[1]["ll_cp"])


@pytest.mark.slow  # > 30 s: make test-all, not make test
def test_two_rank_smoke_run_stores_one_result(tmp_path):
    proc = _torchrun(["-m", "mlpl_lab.commands.torchrun", "--profile", "smoke", "--method", "gr", "--seed", "1",
                      "--set", "epochs=1"], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "on 2 process(es)" in proc.stdout
    runs = [p for p in (tmp_path / "runs").iterdir() if not p.name.startswith(".")]
    # the run and the pretraining run its backbone starts from (trained once, by rank 0)
    assert len(runs) == 2
    runs = [p for p in runs if json.loads((p / "spec.json").read_text())["method"] == "gr"]
    assert len(runs) == 1
    hist = json.loads((runs[0] / "history.json").read_text())["history"]
    assert len(hist) == 1 and hist[0]["world_size"] == 2
    summary = json.loads((runs[0] / "summary.json").read_text())
    assert 0 <= summary["test_mAP"] <= 100


def test_a_global_batch_that_does_not_split_is_refused(monkeypatch):
    from mlpl_lab.engine import distributed

    monkeypatch.setattr(distributed, "world_size", lambda: 3)
    with pytest.raises(ValueError, match="multiple of 3"):
        distributed.local_batch_size(64)
    assert distributed.local_batch_size(66) == 22


@pytest.mark.slow  # > 30 s: make test-all, not make test
def test_run_refuses_a_bad_method_before_starting(tmp_path):
    env = dict(os.environ, MLPL_LAB_DATA=str(tmp_path))
    proc = subprocess.run([sys.executable, "-m", "mlpl_lab.commands.torchrun", "--method", "nope"], cwd=ROOT,
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2 and "nope" in proc.stderr


@pytest.mark.slow  # > 30 s: make test-all, not make test
def test_every_registered_method_trains_under_torchrun(tmp_path):
    """DDP refuses a step that leaves parameters unused or calls a network twice: every method
    must either suit DDP or set ``ddp_wrap = False``."""
    proc = _torchrun([str(ROOT / "tests" / "ddp_all_methods.py")], tmp_path)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "FAILED []" in proc.stdout, proc.stdout[-3000:]


def test_ranks_do_nothing_in_a_single_process():
    """Bug caught: the loop's DDP object touching a single-process run (a wrapped network, a
    gradient or label state rewritten, a shard instead of the loop's own permutation), which would
    change what every ordinary run computes. Oracle: copies taken before each call."""
    from mlpl_lab.engine import distributed
    from mlpl_lab.engine.train import TrainConfig, prepare
    from tiny import tiny_splits

    s = tiny_splits(seed=0)
    method = prepare("ll_cp", s.train, TrainConfig(epochs=1, batch_size=16, model_kwargs={"width": 4}))
    ranks = distributed.Ranks(method, torch.device("cpu"), batch_size=16)
    assert (ranks.rank, ranks.world_size, ranks.main, ranks.local_batch) == (0, 1, True, 16)
    assert ranks.shard(len(s.train), seed=0, epoch=0) is None
    assert all("forward" not in net.__dict__ for net in method.networks().values())
    for p in method.net.parameters():
        p.grad = torch.randn_like(p)
    grads = [p.grad.clone() for p in method.net.parameters()]
    buffers = [b.clone() for b in method.net.buffers()]
    labels = method.labels
    before = labels.clone()
    ranks.begin_epoch()
    method.labels[0] = torch.where(method.labels[0] == 1, 0, 1).to(method.labels.dtype)  # an in-step correction, as LL-Cp makes
    changed = method.labels.clone()
    ranks.average_gradients()
    ranks.end_epoch()
    ranks.unwrap()
    assert all(torch.equal(p.grad, g) for p, g in zip(method.net.parameters(), grads))
    assert all(torch.equal(b, c) for b, c in zip(method.net.buffers(), buffers))
    assert method.labels is labels and torch.equal(method.labels, changed)
    assert not torch.equal(changed, before)
