"""``--fresh`` and ``--fresh-after`` (``report``, ``benchmark``): retrain the runs made before a
time, recorded in ``<out>/.mlpl-lab-fresh`` so an interrupted fresh report resumes with
``--fresh-after last`` without retraining what it already made."""
from __future__ import annotations

import os
import time
from pathlib import Path

from .errors import UsageError

FRESH_STAMP = ".mlpl-lab-fresh"


def add_fresh_args(parser) -> None:
    fresh = parser.add_mutually_exclusive_group()
    fresh.add_argument("--fresh", action="store_true",
                       help="retrain every run made before now (the time is recorded in --out)")
    fresh.add_argument("--fresh-after", default=None, metavar="TIME",
                       help="retrain runs made before TIME (UNIX time, or 'last': the last --fresh "
                            "into --out); resumes an interrupted --fresh")


def parse_fresh_after(value: str | None, out: str) -> float | None:
    """``--fresh-after``: a UNIX time, or ``last`` (the time the last ``--fresh`` into ``out``
    recorded)."""
    if value is None:
        return None
    if value == "last":
        stamp = Path(out) / FRESH_STAMP
        try:
            return float(stamp.read_text().strip())
        except (OSError, ValueError):
            raise UsageError(f"--fresh-after last: no --fresh run has recorded its time in {stamp}; "
                             "start with --fresh") from None
    try:
        return float(value)
    except ValueError:
        raise UsageError(f"--fresh-after takes a UNIX time (as --fresh prints it) or 'last', "
                         f"got {value!r}") from None


def set_fresh(args, out: Path) -> None:
    """``--fresh``: runs made before now are retrained; the time is recorded in ``out`` and
    printed, so an interrupted report resumes with ``--fresh-after last`` without retraining
    what it already made. ``--fresh-after``: that time instead of now."""
    from ..runs.store import FRESH_ENV

    after = args.fresh_after
    if args.fresh:
        after = time.time()
        (out / FRESH_STAMP).write_text(repr(after))
        print(f"[mlpl-lab] --fresh: runs made before {time.ctime(after)} are retrained; to resume "
              f"after an interruption: --fresh-after last (or --fresh-after {after!r})", flush=True)
    if after is not None:
        os.environ[FRESH_ENV] = repr(float(after))
