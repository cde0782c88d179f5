"""torchrun and DistributedDataParallel for the one training loop (nanoGPT's ~20 lines, plus
what methods with state need). The loop in :mod:`mlpl_lab.engine.train` sees all of it through one
object, :class:`Ranks`, whose methods do nothing in a single process; the run machinery above uses
only the process-level helpers (:func:`init_from_env`, :func:`is_main`, :func:`barrier`, ...).

Launch (every rank runs the same command; ``torchrun`` sets ``RANK``/``WORLD_SIZE``)::

    torchrun --nproc_per_node=2 -m mlpl_lab.commands.torchrun --profile smoke --method gr --seed 0

What each rank does, and why:

* **Batches.** ``batch_size`` stays the *global* batch: each rank trains on ``batch_size /
  world_size`` images (an error names the fix when it does not divide). The indices come from
  PyTorch's ``DistributedSampler`` seeded with the run's seed and ``set_epoch(epoch)``: every
  rank sees its own shard of every epoch, and the shards of an epoch are disjoint.
* **Augmentations and dropout differ per rank**: the epoch's RNG is seeded from (seed, epoch,
  rank); rank 0 draws what a single process draws.
* **Gradients.** A method's networks are wrapped in ``DistributedDataParallel`` when its
  training step calls each network's ``forward`` once (``Method.ddp_wrap``, the default). The
  wrapper only routes ``net(x)`` through DDP: ``method.net`` stays the raw module (nanoGPT's
  ``raw_model``), so state dicts, checkpoints, Grad-CAM and the run store are unchanged.
  Methods that call a network twice per step or through another entry point (LAC's
  ``outputs``, PU-MLC's mixup pass) set ``ddp_wrap = False``: their gradients are averaged
  with one all-reduce per parameter after ``backward`` — the same numbers, without DDP's
  overlap of communication and computation.
* **Learnable method state**: every optimised parameter outside a wrapped network (ROLE's
  label matrix) gets its gradient averaged the same way, so all ranks take the same step and
  the matrix stays identical on every rank.
* **Label state** rewritten inside training steps (LL-Cp's permanent corrections): each rank
  changes only its shard's rows; at the end of the epoch the changes are summed across ranks so
  every rank holds the same ``method.labels``. Epoch-end pseudo-labelling (EM+APL, OPML) runs
  on every rank over the whole train set with the same weights, so it agrees without talking.
* **BatchNorm buffers**: DDP broadcasts rank 0's at every forward; at the end of every epoch,
  before any epoch-end pseudo-labelling, rank 0's buffers are broadcast to every network.
* **Rank 0 only**: evaluation, probes, history, best-epoch restore, checkpoints, progress bars
  and the run store. The other ranks wait for it at the next collective.
* **Batch-level selections** (CLS, Co-teaching, Co-teaching+, JoCoR, LL's rejection) rank the
  losses *within a rank's batch* of ``batch_size / world_size`` images: with N ranks a
  selection sees 1/N of the single-process batch. The thresholds are quantiles, so their
  expected rate is unchanged; their variance grows. This is what the papers' own multi-GPU
  code does; gathering the losses across ranks is not offered.
"""
from __future__ import annotations

import os
from typing import Iterable, List, Set

import torch
import torch.distributed as dist


def is_distributed() -> bool:
    return dist.is_available() and dist.is_initialized()


def rank() -> int:
    return dist.get_rank() if is_distributed() else 0


def world_size() -> int:
    return dist.get_world_size() if is_distributed() else 1


def is_main() -> bool:
    """Rank 0 (or a single process): the rank that evaluates, stores and reports."""
    return rank() == 0


def init_from_env() -> bool:
    """Join the process group torchrun describes (``WORLD_SIZE`` > 1); NCCL with CUDA, gloo on
    CPU. Returns whether this process is one of several. Idempotent."""
    if int(os.environ.get("WORLD_SIZE", "1")) <= 1:
        return False
    if is_distributed():
        return True
    for var in ("RANK", "MASTER_ADDR", "MASTER_PORT"):
        if var not in os.environ:
            raise RuntimeError(f"WORLD_SIZE is set but {var} is not: launch with torchrun "
                               "(torchrun --nproc_per_node=N -m mlpl_lab.commands.torchrun ...)")
    use_cuda = torch.cuda.is_available()
    if use_cuda:
        torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
    dist.init_process_group(backend="nccl" if use_cuda else "gloo")
    return True


def shutdown() -> None:
    if is_distributed():
        dist.destroy_process_group()


def local_device(device: torch.device) -> torch.device:
    """Each rank's own GPU (``LOCAL_RANK``); the CPU stays the CPU."""
    if device.type == "cuda" and is_distributed():
        return torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
    return device


def local_batch_size(batch_size: int) -> int:
    """This rank's share of the global batch; the global batch must split evenly."""
    w = world_size()
    if batch_size % w:
        raise ValueError(f"batch_size={batch_size} does not split over {w} ranks; use a multiple "
                         f"of {w} (batch_size is the global batch: each rank trains on batch_size / {w})")
    if batch_size // w < 2:
        raise ValueError(f"batch_size={batch_size} over {w} ranks leaves {batch_size // w} image per "
                         "rank; BatchNorm needs at least 2: raise batch_size")
    return batch_size // w


def shard_order(n: int, seed: int, epoch: int, shuffle: bool = True) -> torch.Tensor:
    """This rank's indices for ``epoch``: ``DistributedSampler`` over ``n`` items (disjoint
    shards of one permutation seeded by ``(seed, epoch)``; the tail that does not split is dropped)."""
    from torch.utils.data import DistributedSampler

    sampler = DistributedSampler(range(n), num_replicas=world_size(), rank=rank(), shuffle=shuffle,
                                 seed=seed, drop_last=True)
    sampler.set_epoch(epoch)
    return torch.tensor(list(iter(sampler)), dtype=torch.long)


class _Routed:
    """Route ``net(x)`` through its DDP wrapper while ``net`` stays the attribute methods use.

    DDP's forward calls ``net(x)`` again; the re-entrancy flag sends that inner call to the
    module's own forward."""

    def __init__(self, net: torch.nn.Module, ddp: torch.nn.Module):
        self.net, self.ddp, self.inside = net, ddp, False
        self.own_forward = net.forward

    def __call__(self, *args, **kwargs):
        # no gradient, nothing to average: evaluation on rank 0 alone, pseudo-labelling and
        # the selections' no-grad passes skip DDP (and its collectives)
        if self.inside or not torch.is_grad_enabled():
            return self.own_forward(*args, **kwargs)
        self.inside = True
        try:
            return self.ddp(*args, **kwargs)
        finally:
            self.inside = False


def wrap_networks(method, device: torch.device) -> Set[int]:
    """Wrap the method's networks in DDP when ``method.ddp_wrap`` (see the module docstring).
    Returns the ids of the parameters DDP now averages (the others are averaged by
    :func:`average_gradients`)."""
    from torch.nn.parallel import DistributedDataParallel as DDP

    covered: Set[int] = set()
    if not is_distributed() or not getattr(method, "ddp_wrap", True):
        return covered
    for net in method.networks().values():
        if not any(p.requires_grad for p in net.parameters()):
            continue
        ddp = DDP(net, device_ids=[device.index] if device.type == "cuda" else None)
        # plain attributes (object.__setattr__): the wrapper must not become a submodule
        net.__dict__["forward"] = _Routed(net, ddp)
        net.__dict__["_mlpl_ddp"] = ddp  # keeps the wrapper (and its reducer) alive
        covered |= {id(p) for p in net.parameters()}
    return covered


def unwrap_networks(method) -> None:
    """Undo :func:`wrap_networks` (after training: evaluation and storage see plain modules)."""
    for net in method.networks().values():
        if "forward" in net.__dict__ and isinstance(net.__dict__["forward"], _Routed):
            del net.__dict__["forward"]
            net.__dict__.pop("_mlpl_ddp", None)


def average_gradients(params: Iterable[torch.nn.Parameter], skip: Set[int]) -> None:
    """All-reduce (mean over ranks) the gradient of every parameter not in ``skip``. A parameter
    without a gradient on this rank contributes zeros (another rank may have one)."""
    if not is_distributed():
        return
    w = world_size()
    for p in params:
        if id(p) in skip or not p.requires_grad:
            continue
        if p.grad is None:
            p.grad = torch.zeros_like(p)
        dist.all_reduce(p.grad, op=dist.ReduceOp.SUM)
        p.grad.div_(w)


def optimised_parameters(method) -> List[torch.nn.Parameter]:
    seen, out = set(), []
    for opt in method.optimizers().values():
        for group in opt.param_groups:
            for p in group["params"]:
                if id(p) not in seen:
                    seen.add(id(p))
                    out.append(p)
    return out


def sync_label_changes(method, start: torch.Tensor | None) -> None:
    """Sum the per-rank changes of ``method.labels`` since ``start`` (rows are disjoint within
    an epoch), so every rank ends the epoch with the same labels."""
    if not is_distributed() or start is None or not torch.is_tensor(getattr(method, "labels", None)):
        return
    labels = method.labels
    delta = (labels.to(torch.float64) - start.to(torch.float64))
    dist.all_reduce(delta, op=dist.ReduceOp.SUM)
    method.labels = (start.to(torch.float64) + delta).to(labels.dtype)


def broadcast_buffers(method) -> None:
    """Rank 0's buffers (BatchNorm statistics) on every rank, at the end of an epoch: the
    epoch-end pseudo-labelling (eval mode) then agrees across ranks, and so does the state
    every rank ends with (DDP alone would broadcast them only at the next forward)."""
    if not is_distributed():
        return
    for net in method.networks().values():
        for b in net.buffers():
            dist.broadcast(b, src=0)


def broadcast_object(obj):
    """Rank 0's ``obj`` on every rank (a single process returns it unchanged)."""
    if not is_distributed():
        return obj
    box = [obj]
    dist.broadcast_object_list(box, src=0)
    return box[0]


def barrier() -> None:
    if is_distributed():
        dist.barrier()


class Ranks:
    """The processes training one run together, as :func:`~mlpl_lab.engine.train.fit` sees them.

    Built after the method's networks are set up: it wraps them in DDP (:func:`wrap_networks`)
    and remembers which optimised parameters DDP does not average. In a single process it is
    rank 0 of 1, every method does nothing, and the loop reads the same with or without torchrun.
    """

    def __init__(self, method, device: torch.device, batch_size: int):
        self.method = method
        self.distributed = is_distributed()
        self.rank, self.world_size = rank(), world_size()
        #: rank 0 (or the single process): evaluates, keeps the history, checkpoints and reports
        self.main = self.rank == 0
        #: this rank's share of the global ``batch_size``
        self.local_batch = local_batch_size(batch_size)
        self._covered = wrap_networks(method, device)
        self._params = optimised_parameters(method) if self.distributed else []
        self._labels_at_start: torch.Tensor | None = None

    def shard(self, n: int, seed: int, epoch: int) -> torch.Tensor | None:
        """This rank's indices of ``n`` training items for ``epoch`` (:func:`shard_order`); None in
        a single process, where the loop draws its own permutation."""
        return shard_order(n, seed, epoch) if self.distributed else None

    def begin_epoch(self) -> None:
        """Remember the method's label state, whose in-step changes :meth:`end_epoch` sums."""
        labels = getattr(self.method, "labels", None)
        self._labels_at_start = (labels.clone() if self.distributed and torch.is_tensor(labels)
                                 else None)

    def average_gradients(self) -> None:
        """After ``backward``: the mean gradient over ranks of what DDP does not average."""
        average_gradients(self._params, self._covered)

    def end_epoch(self) -> None:
        """After the epoch's steps, before epoch-end pseudo-labelling: the per-shard label changes
        summed, and rank 0's BatchNorm statistics on every rank."""
        sync_label_changes(self.method, self._labels_at_start)
        broadcast_buffers(self.method)

    def unwrap(self) -> None:
        """Plain modules again, for evaluation and storage."""
        unwrap_networks(self.method)
