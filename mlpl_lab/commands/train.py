"""``mlpl-lab train [FAMILY ...] [--profile ...] [--workers N]``: train pending families into the
store, resumably (:mod:`mlpl_lab.protocol.families`): each run stored the moment it ends, so a
stopped command loses at most the runs in flight and the same command continues where it stopped.
Without FAMILY, every pending family the store lacks runs of; ``mlpl-lab plan --families`` prices
them first. A family a notebook trains when it runs (08's "class priors", say) can be named too:
it then trains in a sitting of its own instead of inside a report. A family then joins the shipped pack as a part (``mlpl-lab pack export data/packs/
<profile>-course``, :mod:`mlpl_lab.runs.parts`)."""
from __future__ import annotations

from ..profiles import PROFILE_NAMES
from .arguments import notebook_paths, positive_int
from .errors import CommandError


def add_parser(sub) -> None:
    tr = sub.add_parser("train", help="train pending families (07's data sets, length checks, ...) "
                                      "into the store, resumably; each run stored when it ends")
    tr.add_argument("families", nargs="*", default=None,
                    help="families (or one sitting of one, 'NAME [i/n]') by name, pending or trained by a "
                         "notebook; default: every pending family with runs missing from the store")
    tr.add_argument("--profile", default="cpu", choices=PROFILE_NAMES)
    tr.add_argument("--notebooks", nargs="*", default=None, help="names or unique prefixes (default: all)")
    tr.add_argument("--workers", type=positive_int, default=None,
                    help="worker processes (default: 2, the sitting's workers)")
    tr.set_defaults(func=cmd_train)


def cmd_train(args) -> int:
    from ..protocol import families as fam

    workers = args.workers or fam.WORKERS
    paths = notebook_paths(args.notebooks)
    found = fam.priced_families(args.profile, paths)
    try:
        chosen = (fam.select(fam.priced_families(args.profile, paths, now=True), args.families, workers)
                  if args.families
                  else [p for f in found if f.missing for p in fam.sittings(f, workers)])
    except fam.FamilyError as exc:
        raise CommandError(str(exc)) from None
    print(fam.describe_families(found, workers), flush=True)
    if not chosen:
        print("[mlpl-lab] nothing to train: every pending family is stored", flush=True)
        return 0
    try:
        done = fam.train_families(chosen, workers=workers, note=lambda t: print(t, flush=True))
    except fam.FamilyError as exc:
        raise CommandError(str(exc)) from None
    failed = sum(d["failed"] for d in done.values())
    print(f"[mlpl-lab] {sum(d['trained'] for d in done.values())} runs trained in "
          f"{len(done)} sittings ({sum(d['stored_before'] for d in done.values())} were stored)"
          + (f"; {failed} failed: run the command again to retry them" if failed else ""), flush=True)
    return 1 if failed else 0
