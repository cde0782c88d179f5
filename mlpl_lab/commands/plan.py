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
                    help="the effective throughput the projection assumes, in TFLOP/s (default: an "
                         "A100's on the CIFAR-10 ResNet-18 speed runs, printed with the result)")
    pl.set_defaults(func=cmd_plan)


def cmd_plan(args) -> int:
    """Print the series' plan (:mod:`mlpl_lab.chapters.plan`): runs per notebook, images
    trained, FLOPs per image, and the time they take at ``--tflops``."""
    from ..chapters.plan import ASSUMED_TFLOPS, describe, plan_series
    from ..runs.store import RunStore
    from ..runs.workers import looks_stored

    paths = notebook_paths(args.notebooks)
    plan = plan_series(args.profile, paths)
    store = RunStore()
    print(describe(plan, tflops=ASSUMED_TFLOPS if args.tflops is None else args.tflops,
                   stored=lambda spec: looks_stored(store, spec)))
    return 0
