"""The throughput levers of the GPU check (``step_throughput.py``): the gpu profile's training step
(the lab's ResNet-18 at the profile's image size, Adam, the AN loss, bfloat16 autocast) timed in
worker processes, each with its own data held on the device, under one setting of the levers:

* ``workers``: processes training at once on the one device (the series' workers per device);
* ``channels_last``: NHWC network and batches;
* ``compile``: ``torch.compile`` of the network (the compile time is recorded apart);
* ``cuda_graphs``: the whole step (forward, backward, optimiser) captured once in a CUDA graph and
  replayed (static batch tensors, Adam with ``capturable=True``); CUDA only;
* ``batch_size`` with the learning rate scaled linearly (``lr × batch / profile batch``).

Every worker warms up (``warmup`` steps: cuDNN's search, the compile, the capture), waits at a
barrier so all start together, then counts the steps it completes in ``seconds``; images/s per run
is its steps × batch over its own timed wall. The images are synthetic (uniform noise at the
profile's shape, random single-positive labels): the rate of a step does not depend on the pixels."""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Setting:
    workers: int = 1
    channels_last: bool = False
    compile: bool = False
    cuda_graphs: bool = False
    batch_size: int = 128

    @property
    def label(self) -> str:
        parts = [f"{self.workers} worker{'s' if self.workers > 1 else ''}"]
        parts += [n for n, on in (("channels-last", self.channels_last), ("torch.compile", self.compile),
                                  ("CUDA graphs", self.cuda_graphs)) if on]
        return ", ".join(parts + [f"batch {self.batch_size}"])


def worker(index, setting: dict, shape: dict, device: str, warmup: int, seconds: float, barrier, answers):
    """One worker process: build the network and its data on ``device``, warm up, wait for the
    others, time ``seconds`` of steps; answer ``(index, result dict)``."""
    try:
        answers.put((index, _measure(Setting(**setting), shape, device, warmup, seconds, barrier)))
    except BaseException as exc:  # noqa: BLE001 — reported; the barrier is broken so no one waits
        try:
            barrier.abort()
        except Exception:  # noqa: BLE001
            pass
        answers.put((index, {"error": f"{type(exc).__name__}: {exc}"[:600]}))


def _measure(s: Setting, shape: dict, device: str, warmup: int, seconds: float, barrier) -> dict:
    import torch

    from mlpl_lab.engine.device import autocast_dtype
    from mlpl_lab.losses import an_loss
    from mlpl_lab.models import build_model

    torch.set_num_threads(max(1, shape.get("threads", 1)))
    dev = torch.device(device)
    if s.cuda_graphs and dev.type != "cuda":
        raise RuntimeError("CUDA graphs need a CUDA device")
    torch.manual_seed(0)
    fmt = torch.channels_last if s.channels_last else torch.contiguous_format
    net = build_model(shape["model"], shape["classes"], **shape["model_kwargs"]).to(dev).to(memory_format=fmt)
    net.train()
    lr = shape["lr"] * s.batch_size / shape["batch_size"]  # the linear scaling rule
    opt = torch.optim.Adam(net.parameters(), lr=lr, capturable=s.cuda_graphs)
    n, side, bs = shape["images"], shape["image_size"], s.batch_size
    images = torch.rand(n, 3, side, side, device=dev).contiguous(memory_format=fmt)  # its own data
    labels = torch.zeros(n, shape["classes"], device=dev)
    labels[torch.arange(n, device=dev), torch.randint(0, shape["classes"], (n,), device=dev)] = 1.0
    step_net = torch.compile(net) if s.compile else net
    dtype = autocast_dtype(dev, True)  # fit's rule: bfloat16 on the GPU, float32 on a CPU that would emulate it

    def loss_of(x, y):
        with torch.autocast(dev.type, dtype=dtype or torch.bfloat16, enabled=dtype is not None,
                            cache_enabled=not s.cuda_graphs):
            return an_loss(step_net(x), y)

    def batch(i):
        idx = torch.randint(0, n, (bs,), device=dev)
        return images[idx].contiguous(memory_format=fmt), labels[idx]

    def sync():
        if dev.type == "cuda":
            torch.cuda.synchronize()

    t0 = time.perf_counter()
    if s.cuda_graphs:
        sx, sy = batch(0)
        side_stream = torch.cuda.Stream()
        side_stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(side_stream):
            for _ in range(3):
                opt.zero_grad(set_to_none=True)
                loss_of(sx, sy).backward()
                opt.step()
        torch.cuda.current_stream().wait_stream(side_stream)
        graph = torch.cuda.CUDAGraph()
        opt.zero_grad(set_to_none=True)
        with torch.cuda.graph(graph):
            static_loss = loss_of(sx, sy)
            static_loss.backward()
            opt.step()

        def step(i):
            x, y = batch(i)
            sx.copy_(x)
            sy.copy_(y)
            graph.replay()
    else:
        def step(i):
            x, y = batch(i)
            opt.zero_grad(set_to_none=True)
            loss_of(x, y).backward()
            opt.step()

    for i in range(warmup):
        step(i)
    sync()
    warm_s = time.perf_counter() - t0
    barrier.wait(timeout=600)
    t1 = time.perf_counter()
    steps = 0
    while True:
        step(steps)
        steps += 1
        if steps % 5 == 0:
            sync()
            if time.perf_counter() - t1 >= seconds:
                break
    wall = time.perf_counter() - t1
    return {"steps": steps, "seconds": wall, "images_per_s": steps * bs / wall, "warmup_seconds": warm_s,
            "lr": lr, "memory_gib": (torch.cuda.max_memory_allocated() / 2**30) if dev.type == "cuda" else None}


def measure(setting: Setting, shape: dict, device: str, warmup: int, seconds: float, limit_s: float) -> dict:
    """``setting`` measured on ``setting.workers`` spawned processes sharing ``device``: per run
    images/s, their total, or the error. ``limit_s`` bounds the whole measurement."""
    import multiprocessing as mp
    import queue

    ctx = mp.get_context("spawn")
    barrier = ctx.Barrier(setting.workers)
    answers = ctx.Queue()
    procs = [ctx.Process(target=worker, args=(i, asdict(setting), shape, device, warmup, seconds, barrier, answers))
             for i in range(setting.workers)]
    t0 = time.perf_counter()
    for p in procs:
        p.start()
    results, error = {}, None
    while len(results) < len(procs):
        left = limit_s - (time.perf_counter() - t0)
        try:
            i, r = answers.get(timeout=max(1.0, left))
        except queue.Empty:
            error = f"not done within {limit_s:.0f} s"
            break
        results[i] = r
        if "error" in r:
            error = r["error"]
    for p in procs:
        p.join(timeout=5)
        if p.is_alive():
            p.kill()
            p.join(timeout=5)
    out = {"lever": setting.label, **asdict(setting), "wall_seconds": time.perf_counter() - t0}
    if error is not None:
        return out | {"status": "failed", "error": error}
    rates = [results[i]["images_per_s"] for i in sorted(results)]
    return out | {"status": "ok", "images_per_s_per_run": rates, "images_per_s_total": sum(rates),
                  "images_per_s_per_run_mean": sum(rates) / len(rates), "lr": results[0]["lr"],
                  "warmup_seconds": max(results[i]["warmup_seconds"] for i in results),
                  "memory_gib_per_run": results[0]["memory_gib"]}


def best(results: list, adoptable) -> dict | None:
    """The measured setting with the highest total images/s among those ``adoptable(result)``
    accepts (what the lab's series can use as it stands), or None."""
    ok = [r for r in results if r.get("status") == "ok" and adoptable(r)]
    return max(ok, key=lambda r: r["images_per_s_total"]) if ok else None
