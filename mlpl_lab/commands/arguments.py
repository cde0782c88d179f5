"""Arguments several subcommands share: value types, the ``--notebooks``, ``--out`` and
``--dataset/--root/--layout`` checks, and the Dask and ``--plan-workers`` option groups. Each
check runs before any work and answers a bad value with a :class:`UsageError` naming the fix."""
from __future__ import annotations

import argparse
from pathlib import Path

from ..reporting.report import NOTEBOOK_DIR
from .errors import UsageError


def positive_int(text: str) -> int:
    if not text.strip().isdigit() or int(text) < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 1; leave --workers out "
                                         "to train in this process")
    return int(text)


def positive_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (value > 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number, e.g. --tflops 77")
    return value


def positive_seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not (0 < value < float("inf")):
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds > 0, e.g. "
                                         "--cell-timeout 7200; leave it out for the profile's limit")
    return value


def count_or_zero(text: str) -> int:
    if not text.strip().isdigit():
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number >= 0; 0 leaves every run "
                                         "to the notebooks, leave it out for one worker per core")
    return int(text)


def add_engine_args(parser) -> None:
    """``--workers N`` / ``--scheduler ADDRESS`` (:mod:`mlpl_lab.commands.dask`) and ``--cell-timeout``."""
    engine = parser.add_mutually_exclusive_group()
    engine.add_argument("--workers", type=positive_int, default=None,
                        help="train missing runs on a local Dask cluster of N single-threaded workers")
    engine.add_argument("--scheduler", default=None,
                        help="train missing runs on an existing Dask cluster (its scheduler address)")
    parser.add_argument("--cell-timeout", type=positive_seconds, default=None, metavar="SECONDS",
                        help="the seconds one notebook cell may run before its notebook is stopped "
                             "and reported (default: the profile's cell_timeout_s)")


def add_plan_workers_arg(parser, what: str, zero: str) -> None:
    """``--plan-workers N``: train ``what`` first on N single-thread worker processes."""
    parser.add_argument("--plan-workers", type=count_or_zero, default=None, metavar="N",
                        help=f"train {what} first on N single-thread worker processes (default: one "
                             f"per core, or --workers-per-device per GPU); 0: {zero}")
    parser.add_argument("--workers-per-device", type=positive_int, default=None, metavar="K",
                        help="on GPUs, K worker processes share each GPU (default: what the GPU check "
                             "measured best, read from its throughput record; 1 without it)")


def notebook_paths(names=None):
    """The notebooks to run, in series order. ``names``: exact file names, stems or unique
    prefixes ("02", "02_gr"); an ambiguous or unknown name, or a duplicate, is an error."""
    paths = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))
    if names is None:
        return paths
    if len(names) == 0:
        raise UsageError("--notebooks needs at least one name or prefix, e.g. --notebooks 00 02; "
                         f"available: {[p.stem for p in paths]}")
    chosen = []
    for name in names:
        exact = [p for p in paths if name in (p.name, p.stem)]
        match = exact or [p for p in paths if p.name.startswith(name)]
        if not match:
            hint = ("" if name[:1].isdigit() else
                    "; --notebooks reads every word after it as a notebook: put other words (a family's "
                    "name, say) before it, e.g. mlpl-lab train 'FAMILY' --notebooks 07")
            raise UsageError(f"no notebook matches {name!r}; available: {[p.stem for p in paths]}{hint}")
        if len(match) > 1:
            raise UsageError(f"{name!r} matches several notebooks {[p.stem for p in match]}; "
                             "give a longer prefix")
        if match[0] in chosen:
            raise UsageError(f"notebook {match[0].stem} is named twice in --notebooks")
        chosen.append(match[0])
    return sorted(chosen)


def check_out_dir(out: str) -> Path:
    path = Path(out)
    try:
        path.mkdir(parents=True, exist_ok=True)
        probe = path / ".mlpl-lab-write-test"
        probe.write_text("")
        probe.unlink()
    except OSError as exc:
        raise UsageError(f"--out {out!r} cannot be created or written ({exc.strerror or exc}); "
                         "choose a writable folder") from None
    return path


def check_data_args(args) -> None:
    """``--dataset/--root/--layout`` before any work: the scenes take neither a root nor a layout;
    a real dataset needs a root that exists, resolved here against the caller's directory (the
    notebook kernel runs in ``notebooks/``, so a relative path would point elsewhere there)."""
    if args.dataset in (None, "scenes"):
        given = [f for f, v in (("--root", args.root), ("--layout", args.layout)) if v is not None]
        if given:
            raise UsageError(f"{' and '.join(given)} {'is' if len(given) == 1 else 'are'} for a real "
                             "dataset, not the embedded scenes; "
                             "add --dataset voc2012|coco2014|nuswide|cub, or drop them")
        return
    if args.root is None:
        raise UsageError(f"--dataset {args.dataset} needs --root /path/to/it (nothing is downloaded)")
    root = Path(args.root).expanduser().resolve()
    if not root.is_dir():
        raise UsageError(f"--root {args.root!r} is not a folder ({root}); give the folder that holds "
                         f"the {args.dataset} files")
    args.root = str(root)
    args.layout = args.layout or "cole"
