"""One training step per method family under the cpu profile, built as :func:`~mlpl_lab.engine.train.fit`
builds it (shared by ``profile_steps.py`` and ``bench_methods.py``).

Families (the cpu profile from random weights, ``init="scratch"``, so no pretraining run is needed;
seed 0; the chapters' own specs):

* ``AN`` -- the common single-network run (small CNN, linear head, the weak view);
* ``LAC`` -- LAC's stage 2 with the memory queue (chapter 05's "two-stage + queue (LAC)" row):
  the label-query head, the weak and the strong view in one pass, PLC, the contrastive loss over
  the batch and the queue, the EMA after every step;
* ``PU-MLC + LgConv`` -- chapter 06's "PU-MLC + LgConv" row (p = 0.1): vPU, the adaptive
  temperature, and mixup's second forward pass, on the LgConv backbone;
* ``CLS`` -- chapter 04's CLS under single positive: two networks selecting labels for each other.

:func:`build` returns a :class:`Harness` whose :meth:`Harness.step` is the loop's step (the
method's ``training_step``, ``zero_grad``, ``backward``, the optimisers' step, ``on_step_end``,
the LR schedules, the loop's log sums), over the epoch's batches drawn as the loop draws them.
"""
from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Dict, List

import torch

ROOT = Path(__file__).resolve().parent.parent
#: the tree whose ``mlpl_lab`` is imported (this one unless a baseline is being measured)
CODE = Path(os.environ.get("MLPL_LAB_BENCH_CODE", ROOT))
sys.path.insert(0, str(CODE))
os.environ.setdefault("MLPL_LAB_DATA", tempfile.mkdtemp(prefix="mlpl-method-steps-"))

FAMILIES = ("AN", "LAC", "PU-MLC + LgConv", "CLS")


def profile():
    from mlpl_lab.profiles import get_profile

    return get_profile("cpu", init="scratch")


def spec_of(family: str, epochs: int | None = None):
    """The RunSpec of ``family``'s run (module docstring); ``epochs`` overrides the chapter's."""
    from mlpl_lab.chapters import cls as cls_chapter
    from mlpl_lab.chapters import lac as lac_chapter
    from mlpl_lab.chapters import pu_mlc as pu_chapter

    P = profile()
    over = {} if epochs is None else {"epochs": epochs}
    if family == "AN":
        return P.spec("an", seed=0, **over)
    if family == "LAC":
        s = lac_chapter.row_spec(P, "two-stage + queue (LAC)", seed=0)
        if epochs is None:
            return s
        return s.replace(train=dict(s.train, epochs=epochs),
                         init_from=s.init_from.replace(train=dict(s.init_from.train, epochs=epochs)))
    if family == "PU-MLC + LgConv":
        regime, params = pu_chapter.regime_of("pu", 0.1)
        return P.spec("pu_mlc", {"gamma": 0.55}, regime, params, seed=0,
                      model_kwargs=dict(P.model_kwargs) | {"lgconv": True},
                      epochs=epochs or pu_chapter.design("cpu").pu_epochs)
    if family == "CLS":
        d = cls_chapter.design("cpu")
        return P.spec("cls", d.cls_hparams("single positive"), seed=0, **over)
    raise ValueError(f"unknown family {family!r}; one of {FAMILIES}")


@dataclass
class Harness:
    family: str
    method: Any
    batches: List[Dict[str, torch.Tensor]]
    step: Callable[[Dict[str, torch.Tensor]], None]
    spec: Any


def build(family: str, n_batches: int = 16) -> Harness:
    """The method of ``family`` set up as :func:`fit` sets it up (a stage 2 starts from a
    stage 1 prepared from the same seed, random weights) and ``n_batches`` of epoch 0's batches."""
    from mlpl_lab.data.device_split import DeviceSplit
    from mlpl_lab.engine import train as T
    from mlpl_lab.methods import build_method
    from mlpl_lab.runs.splits_cache import build_splits
    from mlpl_lab.runs.validation import config_of

    spec = spec_of(family)
    splits = build_splits(spec)
    cfg = config_of(spec, progress=False, device="cpu")
    device = torch.device("cpu")
    method = T.prepare(build_method(spec.method, **spec.method_params), splits.train, cfg, device)
    if spec.init_from is not None:
        first = T.prepare(build_method(spec.init_from.method, **spec.init_from.method_params),
                          splits.train, config_of(spec.init_from, progress=False, device="cpu"), device)
        T.seed_everything(cfg.seed)
        method.setup(method.ctx)  # as fit: the networks from the seed, then the transfer
        T.transfer(method, first, None, score_val=None)
        method.setup_ema()
    method.train(True)
    if cfg.channels_last:
        for net in method.networks().values():
            net.to(memory_format=torch.channels_last)
    schedulers = T._make_schedulers(method, cfg, method.ctx.steps_per_epoch)
    optimizers = method.optimizers()
    scaler = torch.amp.GradScaler("cuda", enabled=False)
    step_hook = method.ema_model is not None or type(method).on_step_end is not T.Method.on_step_end
    T.seed_everything(cfg.seed * 1_000_003 + 7_919 * 0)
    method.on_epoch_start(0)
    resident = DeviceSplit(splits.train, device)
    batches = []
    for batch in T._epoch_batches(splits.train, resident, None, cfg.batch_size, cfg, method.views, device):
        batches.append(batch)
        if len(batches) == n_batches:
            break
    sums: Dict[str, Any] = {}
    counter = {"step": 0}

    def step(batch):
        loss, logs = method.training_step(batch, 0)
        for opt in optimizers.values():
            opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        if T._optimizer_step(optimizers, scaler, step_hook):
            method.on_step_end(counter["step"])
            counter["step"] += 1
        for sch in schedulers.values() if cfg.schedule_step == "step" else ():
            sch.step()
        T._add_logs(sums, loss, logs)

    return Harness(family, method, batches, step, spec)
