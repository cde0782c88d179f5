"""check.sh step 3: the gpu profile's training step, and the levers that fill the card.

1. **Through fit**: the profile's step (ResNet-18, its image size and batch, bfloat16 autocast, its
   own memory layout, the training split held on the device) through the lab's ``fit``; the first
   epoch is a warm-up (cuDNN's algorithm search) and is not counted.
2. **The levers** (:mod:`levers`), each in worker processes with their own data on the device:
   1, 2, 4 and 8 runs at once sharing the device (first: the series uses them); channels-last;
   CUDA graphs for the whole step;
   a larger batch with the learning rate scaled; ``torch.compile`` (last: it compiles first).
   Images/s per run and in total for each; a lever not measured within the step's budget is
   listed as such.
3. **The best**: the setting with the highest total images/s that the lab's series uses as it
   stands — worker processes per device running the profile's own step (its batch size, layout,
   eager): ``best`` (``workers_per_device``, images/s per run and in total, the gain over one
   run). The levers the series does not use (``torch.compile``, CUDA graphs; a larger batch or
   another layout changes the protocol's run keys) are recorded beside it with their gain, for
   the protocol to decide on.

Under ``--rehearse`` (the CPU) the same code paths run at tiny sizes; CUDA graphs are skipped
(they need CUDA), and the record says ``cpu_rehearsal``: its rates are never a GPU's."""
from __future__ import annotations

import argparse
import statistics
import time
from dataclasses import replace

from _common import MODE, SIZES, peak_tflops, write

import levers
import torch

from mlpl_lab.protocol.plan import flops_per_image
from mlpl_lab.engine.device import autocast_dtype
from mlpl_lab.engine.train import fit
from mlpl_lab.profiles import get_profile
from mlpl_lab.runs.splits_cache import build_splits
from mlpl_lab.runs.validation import config_of

#: the levers' sizes: images each worker holds on the device, warm-up steps, timed seconds; the
#: rehearsal's image size and batch are tiny (code paths only)
LEVER_SIZES = {"gpu": {"images": 4096, "warmup": 15, "seconds": 4.0, "image_size": None, "batch_size": None},
               "rehearse": {"images": 32, "warmup": 2, "seconds": 1.0, "image_size": 32, "batch_size": 8}}[MODE]
#: the settings, in the order measured (compile last: it spends its budget compiling first)
#: runs at once on the device; the rehearsal runs the same code path with 1 and 2 (eight processes
#: on two shared cores would measure the machine's load, nothing else)
WORKERS = (1, 2, 4, 8) if MODE == "gpu" else (1, 2)
#: the least budget left to start a lever: on an H200 each took 20-25 s of wall (start-up, CUDA,
#: warm-up, 4 timed seconds), so one started with less ran past the step's limit
LEVER_MIN_S = 30 if MODE == "gpu" else 10
LARGER_BATCH = 4  # × the profile's batch


def through_fit(spec, splits, device):
    cfg = config_of(spec, progress=False, device=str(device))
    r = fit("an", splits.train, splits.val, splits.test, cfg)
    per_epoch = (len(splits.train) // cfg.batch_size) * cfg.batch_size
    rates = [per_epoch / row["train_seconds"] for row in r.history[1:]]
    return statistics.median(rates), rates, bool(cfg.channels_last)


def settings(P, batch):
    base = levers.Setting(workers=1, channels_last=bool(P.channels_last), batch_size=batch)
    # the worker counts first: the series adopts them as they stand (the others change the protocol
    # or are not in fit), so a step cut short by its budget still measures what the series uses
    out = [base] + [replace(base, workers=w) for w in WORKERS if w > 1]
    out += [replace(base, channels_last=not base.channels_last), replace(base, cuda_graphs=True),
            replace(base, batch_size=batch * LARGER_BATCH)]
    return out + [replace(base, compile=True)]


def summarise(rec, results, adoptable):
    """Each result's gain over one run of the profile's own step, the best setting the series uses
    (``adoptable``), and the faster levers it does not use, with why: into ``rec``."""
    one = next((r for r in results if r.get("status") == "ok" and r["workers"] == 1 and adoptable(r)), None)
    for r in results:
        if one is not None and r.get("status") == "ok":
            r["total_over_one_run"] = r["images_per_s_total"] / one["images_per_s_total"]
    chosen = levers.best(results, adoptable)
    rec["best"] = None if chosen is None or one is None else {
        "workers_per_device": chosen["workers"], "lever": chosen["lever"],
        "images_per_s_total": chosen["images_per_s_total"],
        "images_per_s_per_run": chosen["images_per_s_per_run_mean"],
        "total_over_one_run": chosen["images_per_s_total"] / one["images_per_s_total"],
        "why": "the highest total images/s among the settings the series uses as it stands (worker "
               "processes per device running the profile's own step)"}
    rec["not_adopted"] = [
        {"lever": r["lever"], "total_over_one_run": r["total_over_one_run"],
         "why": ("torch.compile and CUDA graphs are not in the lab's fit" if r["compile"] or r["cuda_graphs"]
                 else "changes the protocol (the runs' keys): a design decision")}
        for r in results if r.get("status") == "ok" and r.get("total_over_one_run") and not adoptable(r)]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--budget", type=float, default=85 if MODE == "gpu" else 300,
                    help="seconds for the step after its imports (check.sh's limit keeps a margin for them)")
    args = ap.parse_args()
    t_start = time.perf_counter()
    device = torch.device(SIZES["device"])
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("step 3 needs CUDA (GPU_CHECK_MODE=gpu); --rehearse runs it on the CPU")
    P = get_profile(SIZES["profile"])
    n, epochs, n_eval = SIZES["throughput_images"], SIZES["throughput_epochs"], SIZES["throughput_eval_images"]
    spec = P.spec("an", scene={"n_train": n, "n_val": n_eval, "n_test": n_eval}, epochs=epochs, probes=[],
                  test_every_epoch=False)
    t0 = time.perf_counter()
    splits = build_splits(spec)
    data_s = time.perf_counter() - t0
    bs = spec.train["batch_size"]
    fit_rate, fit_all, fit_nhwc = through_fit(spec, splits, device)
    fb, fwd = flops_per_image(spec.train["model"], spec.train["model_kwargs"], spec.data["image_size"],
                              splits.train.num_classes)
    peak = peak_tflops(torch.cuda.get_device_name(0)) if device.type == "cuda" else None
    rec = {"what": "the gpu profile's training step through fit (images/s; the first epoch a warm-up), then "
                   "the throughput levers in worker processes sharing the device, each with its own data on it",
           "cpu_rehearsal": MODE == "rehearse",
           "profile": P.name, "model": spec.train["model"], "image_size": spec.data["image_size"],
           "batch_size": bs, "lr": spec.train["lr"], "channels_last": fit_nhwc,
           "autocast_dtype": str(autocast_dtype(device, True) or "float32").removeprefix("torch."),
           "train_images": n, "timed_epochs": epochs - 1, "data_seconds": round(data_s, 2),
           "fit_images_per_s": fit_rate, "fit_images_per_s_epochs": fit_all,
           "gflop_per_image_train": fb / 1e9, "gflop_per_image_forward": fwd / 1e9,
           "fit_tflops": fit_rate * fb / 1e12, "bf16_dense_peak_tflops": peak}
    if peak:
        rec["fit_share_of_peak"] = rec["fit_tflops"] / peak
    print(f"fit {fit_rate:,.0f} images/s, {rec['fit_tflops']:.2f} TFLOP/s"
          + (" (CPU rehearsal)" if MODE == "rehearse" else ""), flush=True)
    write("throughput", rec)  # the step's first half stays recorded if the levers run out of time

    lb = LEVER_SIZES["batch_size"] or bs
    shape = {"model": spec.train["model"], "model_kwargs": spec.train["model_kwargs"],
             "classes": splits.train.num_classes, "image_size": LEVER_SIZES["image_size"] or spec.data["image_size"],
             "images": LEVER_SIZES["images"], "lr": spec.train["lr"], "batch_size": lb,
             "threads": 1 if device.type == "cpu" else 2}
    rec["lever_shape"] = shape | {"warmup_steps": LEVER_SIZES["warmup"], "timed_seconds": LEVER_SIZES["seconds"],
                                  "data": "synthetic: uniform noise at the profile's shape, one positive a row"}
    results = rec["levers"] = []
    adoptable = (lambda r: not (r["compile"] or r["cuda_graphs"]) and r["batch_size"] == lb
                 and r["channels_last"] == bool(P.channels_last))
    for s in settings(P, lb):
        left = args.budget - (time.perf_counter() - t_start)
        if s.cuda_graphs and device.type != "cuda":
            results.append({"lever": s.label, **vars(s), "status": "skipped: CUDA graphs need a CUDA device"})
        elif left < LEVER_MIN_S:  # a lever's processes start, warm up and time: it would overrun the limit
            results.append({"lever": s.label, **vars(s), "status": "not measured: the step's budget was spent"})
        else:
            r = levers.measure(s, shape, str(device), LEVER_SIZES["warmup"], LEVER_SIZES["seconds"], limit_s=left - 3)
            results.append(r)
            print(f"  {r['lever']}: " + (f"{r['images_per_s_total']:,.0f} images/s in total, "
                                         f"{r['images_per_s_per_run_mean']:,.0f} per run" if r["status"] == "ok"
                                         else r["status"] + " " + r.get("error", "")), flush=True)
        summarise(rec, results, adoptable)
        write("throughput", rec)  # after every lever: a step stopped by its timeout keeps what it measured
    if rec["best"]:
        b = rec["best"]
        print(f"best the series uses: {b['lever']}: {b['images_per_s_total']:,.0f} images/s in total, "
              f"{b['total_over_one_run']:.2f}x one run" + (" (CPU rehearsal, not a GPU rate)" if MODE == "rehearse" else ""))
    write("throughput", rec)


if __name__ == "__main__":
    main()
