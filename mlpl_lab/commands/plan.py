"""``mlpl-lab plan [--profile ...] [--notebooks ...] [--tflops X]`` prints the series' plan
(:mod:`mlpl_lab.chapters.plan`): runs per notebook, images trained, FLOPs per image and the time
they take at X TFLOP/s."""
from __future__ import annotations

from ..profiles import PROFILE_NAMES
from .arguments import notebook_paths, positive_float


def add_parser(sub) -> None:
    pl = sub.add_parser("plan", help="print the series' runs, images trained, FLOPs and a time projection")
    pl.add_argument("--profile", default="cpu", choices=PROFILE_NAMES)
    pl.add_argument("--notebooks", nargs="*", default=None,
                    help="names or unique prefixes, e.g. 00 02_gr_loss")
    pl.add_argument("--tflops", type=positive_float, default=None,
                    help="the effective throughput the projection uses, in TFLOP/s (default under the "
                         "gpu profile: the rate the GPU check measured end to end, printed with its "
                         "source; other profiles print no projection without it)")
    pl.set_defaults(func=cmd_plan)


def cmd_plan(args) -> int:
    """Print the series' plan (:mod:`mlpl_lab.chapters.plan`): runs per notebook, images
    trained, FLOPs per image, and the time they take at ``--tflops``."""
    from ..chapters.plan import describe, measured_gpu_throughput, plan_series
    from ..runs.store import RunStore
    from ..runs.workers import looks_stored

    paths = notebook_paths(args.notebooks)
    plan = plan_series(args.profile, paths)
    store = RunStore()
    tflops, source = args.tflops, None
    if tflops is None and plan.profile.name == "gpu":
        measured = measured_gpu_throughput()
        if measured is not None:
            tflops, source = measured.tflops, measured.source
    print(describe(plan, tflops=tflops, stored=lambda spec: looks_stored(store, spec), source=source))
    if tflops is None:
        print("no projection of the time: give --tflops X (the effective TFLOP/s of your device)")
    return 0
