"""One run from the command line, on one process or many (torchrun).

::

    python -m mlpl_lab.commands.torchrun --profile smoke --method gr --regime single_positive --seed 0
    torchrun --nproc_per_node=2 -m mlpl_lab.commands.torchrun --profile smoke --method an --seed 0
    python -m mlpl_lab.commands.torchrun --profile cpu --method epr --param expected_num_pos=2.1 \\
        --regime drop_positives --regime-param alpha=0.5 --set epochs=4

The run is the same :class:`~mlpl_lab.runs.store.RunSpec` a notebook would build (profile, method,
regime, seed, overrides), so its result lands in the run store once and every notebook and
the benchmark read it from there. Under torchrun each rank trains its shard of every epoch
(:mod:`mlpl_lab.engine.distributed`); rank 0 evaluates, stores and prints. ``batch_size`` is the
global batch. Values after ``=`` are read as JSON when they parse (numbers, true/false,
lists) and as text otherwise.
"""
from __future__ import annotations

import argparse
import json
import sys
from typing import Any, Dict, List

from ..profiles import PROFILE_NAMES


def _pairs(items: List[str] | None, flag: str) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for item in items or ():
        if "=" not in item:
            raise SystemExit(f"mlpl_lab.commands.torchrun: error: {flag} takes key=value, got {item!r}")
        k, v = item.split("=", 1)
        try:
            out[k] = json.loads(v)
        except json.JSONDecodeError:
            out[k] = v
    return out


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m mlpl_lab.commands.torchrun", description=__doc__.split("\n\n")[0])
    p.add_argument("--profile", default="smoke", choices=PROFILE_NAMES)
    p.add_argument("--method", required=True, help="a registered method, e.g. an, gr, cls")
    p.add_argument("--param", nargs="*", metavar="KEY=VALUE", help="method hyperparameters")
    p.add_argument("--regime", default="single_positive")
    p.add_argument("--regime-param", nargs="*", metavar="KEY=VALUE")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dataset", default="scenes", help="scenes, or voc2012/coco2014/nuswide/cub with --root")
    p.add_argument("--root", default=None, help="the real dataset's folder")
    p.add_argument("--layout", default="cole", choices=("cole", "voc_raw", "coco_json"))
    p.add_argument("--set", nargs="*", metavar="KEY=VALUE", help="training settings (TrainConfig fields)")
    return p


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    params, regime_params, overrides = (_pairs(args.param, "--param"),
                                        _pairs(args.regime_param, "--regime-param"),
                                        _pairs(args.set, "--set"))
    from ..engine import distributed
    from ..protocol.common import with_dataset
    from ..runs.ensure import ensure
    from ..runs.validation import validate

    try:
        P = with_dataset(args.profile, args.dataset, args.root, args.layout)
        spec = P.spec(args.method, params, args.regime, regime_params, seed=args.seed, **overrides)
        validate(spec)  # before the process group: a typo fails at once on every rank
    except (ValueError, TypeError, KeyError) as exc:
        print(f"mlpl_lab.commands.torchrun: error: {exc}", file=sys.stderr)
        return 2
    distributed.init_from_env()
    try:
        runs = ensure([spec])
        if distributed.is_main():
            run = runs[0]
            print(f"[mlpl_lab.commands.torchrun] {spec.describe()} on {distributed.world_size()} process(es): "
                  f"best epoch {run.best_epoch + 1}, val mAP {run.best['val_mAP']:.2f}, "
                  f"test mAP {run.best['test_mAP']:.2f}; stored at {run.path}", flush=True)
    finally:
        distributed.shutdown()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
