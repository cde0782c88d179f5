"""check.sh step 5: one gpu-profile run end to end — AN, single positive, the profile's full
length and data (rehearsal: the cut's CPU sizes, cut.py) — from an empty store: its pretraining run (the lab's
pretrained backbone, ``Profile.pretrain``) and then the run, each timed, through the runner
(:func:`mlpl_lab.runs.ensure.ensure`, which builds the scenes, trains and stores). Records the
wall time of each, the time in training epochs, and the run's test mAP at its best-val epoch."""
from __future__ import annotations

import time

from _common import MODE, SIZES, write

import torch

from mlpl_lab.profiles import get_profile
from mlpl_lab.runs.ensure import ensure
from mlpl_lab.runs.store import RunStore


def timed(spec, store):
    t0 = time.perf_counter()
    (run,) = ensure([spec], store=store, quiet=True)
    wall = time.perf_counter() - t0
    return run, {"wall_seconds": wall, "epochs": len(run.history),
                 "train_seconds": sum(r["train_seconds"] for r in run.history),
                 "epoch_seconds": sum(r["seconds"] for r in run.history),
                 "train_images": run.spec.data["n_train"], "images_trained": run.spec.data["n_train"] * len(run.history),
                 "amp_dtype": run.environment.get("amp_dtype"), "device": run.environment.get("device")}


def main():
    if SIZES["device"] == "cuda" and not torch.cuda.is_available():
        raise SystemExit("step 3 needs CUDA (GPU_CHECK_MODE=gpu); --rehearse runs it on the CPU")
    if MODE == "rehearse":  # the CPU: the cut's sizes (cut.py), the gpu profile's code paths
        import cut

        P = get_profile(cut.register_cut("rehearse"))
    else:
        P = get_profile(SIZES["profile"])
    spec = P.spec("an")  # single positive, the profile's seed 0, epochs and data
    store = RunStore()
    if store.get(spec) is not None or (spec.backbone_from and store.get(spec.backbone_from) is not None):
        raise SystemExit(f"step 3 times a run from an empty store, but {store.root} already holds it")
    pre, pre_rec = timed(spec.backbone_from, store) if spec.backbone_from is not None else (None, None)
    run, an_rec = timed(spec, store)
    best = run.best
    rec = {"what": f"one {P.name}-profile run end to end from an empty store: the pretraining run, then "
                   "AN (single positive); wall seconds include building the scenes",
           "profile": P.name, "method": "AN", "regime": "single_positive", "seed": spec.seed,
           "model": spec.train["model"], "image_size": spec.data["image_size"],
           "pretraining": pre_rec, "an": an_rec,
           "wall_seconds": an_rec["wall_seconds"] + (pre_rec["wall_seconds"] if pre_rec else 0.0),
           "test_mAP": best.get("test_mAP"), "val_mAP": best.get("val_mAP"),
           "best_epoch": run.best_epoch + 1, "converged": run.converged}
    print(f"{P.name} AN run end to end: {rec['wall_seconds']:.1f} s "
          f"(pretraining {pre_rec['wall_seconds'] if pre_rec else 0:.1f} s), test mAP {rec['test_mAP']:.2f}")
    write("train_run", rec)


if __name__ == "__main__":
    main()
