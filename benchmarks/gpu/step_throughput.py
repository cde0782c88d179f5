"""check.sh step 2: the gpu profile's training step (ResNet-18, 64 px, bfloat16 autocast, NHWC,
the training split held on the device) through the lab's ``fit`` and through a bare
forward/backward/step loop on the same device-resident tensors.

Records images/s of each, their ratio, and the share of the card's dense bf16 peak that the
FLOPs per image (``torch.utils.flop_counter``, :func:`mlpl_lab.chapters.plan.flops_per_image`)
times images/s reach. ``fit`` is measured twice: NHWC, as the issue names the gpu step, and with
the profile's own ``channels_last`` setting when it differs (the gpu profile leaves it off).
The first epoch of each measurement is a warm-up (cuDNN's algorithm search) and is not counted."""
from __future__ import annotations

import statistics
import time
from dataclasses import replace

from _common import SIZES, peak_tflops, write

import torch

from mlpl_lab.chapters.plan import flops_per_image
from mlpl_lab.data.device_split import DeviceSplit
from mlpl_lab.engine.train import autocast_dtype, fit, uses_grad_scaler
from mlpl_lab.losses import an_loss
from mlpl_lab.models import build_model
from mlpl_lab.profiles import get_profile
from mlpl_lab.runs.splits_cache import build_splits
from mlpl_lab.runs.validation import config_of


def sync(device):
    if device.type == "cuda":
        torch.cuda.synchronize()


def through_fit(spec, splits, device, channels_last):
    cfg = replace(config_of(spec, progress=False, device=str(device)), channels_last=channels_last)
    r = fit("an", splits.train, splits.val, splits.test, cfg)
    per_epoch = (len(splits.train) // cfg.batch_size) * cfg.batch_size
    rates = [per_epoch / row["train_seconds"] for row in r.history[1:]]
    return statistics.median(rates), rates


def bare(spec, splits, device, steps, repeats):
    """The same network, optimiser, autocast dtype and batches (gathered once from the same
    device-resident split, NHWC); each timed repeat runs ``steps`` forward/backward/step."""
    t = spec.train
    torch.manual_seed(0)
    net = build_model(t["model"], splits.train.num_classes, **t["model_kwargs"]).to(device)
    net = net.to(memory_format=torch.channels_last).train()
    opt = torch.optim.Adam(net.parameters(), lr=t["lr"])
    dtype = autocast_dtype(device, True)
    assert not uses_grad_scaler(dtype) or device.type == "cuda"
    scaler = torch.amp.GradScaler("cuda", enabled=uses_grad_scaler(dtype))
    resident = DeviceSplit(splits.train, device)
    bs = t["batch_size"]
    order = torch.randperm(len(resident), device=device)
    batches = [resident.batch(order[i * bs:(i + 1) * bs], view="none", channels_last=True)
               for i in range(min(steps, len(resident) // bs))]

    def step(batch):
        with torch.autocast(device.type, dtype=dtype):
            loss = an_loss(net(batch["image"]), batch["observed"])
        opt.zero_grad(set_to_none=True)
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()

    for b in batches:  # warm-up, as fit's first epoch
        step(b)
    sync(device)
    rates = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for i in range(steps):
            step(batches[i % len(batches)])
        sync(device)
        rates.append(steps * bs / (time.perf_counter() - t0))
    return statistics.median(rates), rates, str(dtype).removeprefix("torch.")


def main():
    device = torch.device(SIZES["device"])
    if device.type == "cuda" and not torch.cuda.is_available():
        raise SystemExit("step 2 needs CUDA (GPU_CHECK_MODE=gpu); --rehearse runs it on the CPU")
    P = get_profile(SIZES["profile"])
    n, epochs = SIZES["throughput_images"], SIZES["throughput_epochs"]
    spec = P.spec("an", scene={"n_train": n, "n_val": 256, "n_test": 256}, epochs=epochs, probes=[],
                  test_every_epoch=False)
    t0 = time.perf_counter()
    splits = build_splits(spec)
    data_s = time.perf_counter() - t0
    bs = spec.train["batch_size"]
    steps = n // bs
    fit_nhwc, fit_nhwc_all = through_fit(spec, splits, device, True)
    bare_rate, bare_all, dtype = bare(spec, splits, device, steps, epochs - 1)
    rec = {"what": "the gpu profile's training step through fit and through a bare forward/backward/step "
                   "loop on the same device-resident tensors (images/s; first epoch a warm-up)",
           "profile": P.name, "model": spec.train["model"], "image_size": spec.data["image_size"],
           "batch_size": bs, "autocast_dtype": dtype, "channels_last": True,
           "profile_sets_channels_last": bool(P.channels_last),
           "train_images": n, "timed_epochs": epochs - 1, "data_seconds": round(data_s, 2),
           "fit_images_per_s": fit_nhwc, "fit_images_per_s_epochs": fit_nhwc_all,
           "bare_images_per_s": bare_rate, "bare_images_per_s_repeats": bare_all,
           "fit_over_bare": fit_nhwc / bare_rate}
    if not P.channels_last:  # the profile as it stands: NCHW
        rate, rates = through_fit(spec, splits, device, False)
        rec |= {"fit_profile_layout_images_per_s": rate, "fit_profile_layout_epochs": rates,
                "nhwc_over_profile_layout": fit_nhwc / rate}
    fb, fwd = flops_per_image(spec.train["model"], spec.train["model_kwargs"], spec.data["image_size"],
                              splits.train.num_classes)
    rec |= {"gflop_per_image_train": fb / 1e9, "gflop_per_image_forward": fwd / 1e9,
            "fit_tflops": fit_nhwc * fb / 1e12, "bare_tflops": bare_rate * fb / 1e12}
    if device.type == "cuda":
        peak = peak_tflops(torch.cuda.get_device_name(0))
        rec["bf16_dense_peak_tflops"] = peak
        if peak:
            rec["fit_share_of_peak"] = rec["fit_tflops"] / peak
            rec["bare_share_of_peak"] = rec["bare_tflops"] / peak
    print(f"fit {fit_nhwc:,.0f} images/s, bare {bare_rate:,.0f} images/s: {fit_nhwc / bare_rate:.2f}; "
          f"{rec['fit_tflops']:.2f} TFLOP/s through fit")
    write("throughput", rec)


if __name__ == "__main__":
    main()
