"""``mlpl-lab plan [--profile ...] [--notebooks ...] [--tflops X] [--bump COMPONENT]`` prints the
series' plan (:mod:`mlpl_lab.protocol.plan`): runs per notebook, images trained, FLOPs per image and
the time they take at X TFLOP/s; with ``--bump``, how many runs bumping that component's numerics
version re-keys and how long retraining them takes (:mod:`mlpl_lab.protocol.rekey`)."""
from __future__ import annotations

import argparse

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
    pl.add_argument("--bump", type=component_name, default=None, metavar="COMPONENT",
                    help="say how many runs of the series bumping COMPONENT's numerics version (one of "
                         "mlpl_lab/core/numerics.py VERSIONS: engine, data.scenes, model.small_cnn, "
                         "method.gr, ...) re-keys, and how long they take to train")
    pl.add_argument("--families", action="store_true",
                    help="also price each pending family on this machine kind and show how it splits "
                         "into sittings (what `mlpl-lab train` trains)")
    pl.set_defaults(func=cmd_plan)


def component_name(text: str) -> str:
    """A component of :data:`mlpl_lab.core.numerics.VERSIONS` (checked without importing torch)."""
    from ..core.numerics import VERSIONS

    if text not in VERSIONS:
        raise argparse.ArgumentTypeError(f"unknown component {text!r}; the components (mlpl_lab/core/"
                                         f"numerics.py VERSIONS): {', '.join(sorted(VERSIONS))}")
    return text


def cmd_plan(args) -> int:
    """Print the series' plan (:mod:`mlpl_lab.protocol.plan`): runs per notebook, images
    trained, FLOPs per image, and the time they take at ``--tflops``."""
    from ..protocol.plan import describe, measured_gpu_throughput, plan_series
    from ..runs.store import RunStore
    from ..runs.workers import looks_stored

    paths = notebook_paths(args.notebooks)
    plan = plan_series(args.profile, paths)
    store = RunStore()
    if getattr(args, "bump", None) is not None:
        return _bump(plan, args.bump, store, args.tflops)
    tflops, source = args.tflops, None
    if tflops is None and plan.profile.name == "gpu":
        measured = measured_gpu_throughput()
        if measured is not None:
            tflops, source = measured.tflops, measured.source
    print(describe(plan, tflops=tflops, stored=lambda spec: looks_stored(store, spec), source=source))
    if tflops is None:
        print("no projection of the time: give --tflops X (the effective TFLOP/s of your device)")
    if getattr(args, "families", False):
        from ..protocol import families

        print(families.describe_families(families.priced_families(args.profile, paths, store)))
    return 0


def _bump(plan, component: str, store, tflops) -> int:
    """``--bump``: the runs the bump re-keys and their time (:mod:`mlpl_lab.protocol.rekey`)."""
    from ..protocol.rekey import bump_cost, describe_bump
    from ..runs.shipped import manifest_of, shipped_pack

    path = shipped_pack(plan.profile)
    manifest = manifest_of(path) if path is not None else None
    print(describe_bump(bump_cost(plan, component, store, manifest, tflops)))
    return 0
