"""``mlpl-lab pack export|inspect|import|migrate``: run packs, one checksummed file carrying a
store's runs to other machines (:mod:`mlpl_lab.runs.pack`); ``migrate`` re-keys a pack of the old
key scheme without retraining (:mod:`mlpl_lab.runs.migrate`)."""
from __future__ import annotations

from pathlib import Path

from ..profiles import PROFILE_NAMES
from .arguments import notebook_paths
from .errors import CommandError


def add_parser(sub) -> None:
    pk = sub.add_parser("pack", help="run packs: carry a store's runs to other machines")
    pk_sub = pk.add_subparsers(dest="pack_command", required=True)
    ex = pk_sub.add_parser("export", help="write the runs the notebooks read to one checksummed file, "
                                          "or bring a pack of parts (a folder) up to date")
    ex.add_argument("file", help="the pack to write: FILE.mlplpack (one file), or a folder (a pack of "
                                 "immutable parts, one per designed family: what data/packs/ ships)")
    ex.add_argument("--profile", default="cpu", choices=PROFILE_NAMES)
    ex.add_argument("--notebooks", nargs="*", default=None, help="names or unique prefixes (default: all)")
    ex.add_argument("--weights", default="needed", choices=("needed", "all", "none"),
                    help="which runs' weights: those a notebook loads (default), all, none")
    ex.add_argument("--name", default=None, help="the pack's name (default <profile>-<date>)")
    ins = pk_sub.add_parser("inspect", help="verify a pack and print its runs, sizes and provenance")
    ins.add_argument("file")
    im = pk_sub.add_parser("import", help="verify a pack whole, then add its runs to the store")
    im.add_argument("file")
    im.add_argument("--replace", action="store_true", help="replace runs already in the store")
    mg = pk_sub.add_parser("migrate", help="re-key a pack of key scheme 1 (one numerics version) to this "
                                           "code's per-component keys, without retraining")
    mg.add_argument("file", help="the old pack (verified whole; never changed)")
    mg.add_argument("out", help="the migrated pack to write (*.mlplpack; written atomically)")
    pk.set_defaults(func=cmd_pack)


def cmd_pack(args) -> int:
    """``mlpl-lab pack export|inspect|import|migrate``: run packs (:mod:`mlpl_lab.runs.pack`)."""
    from ..runs import pack, parts

    try:
        if args.pack_command == "export":
            names = [p.stem for p in notebook_paths(args.notebooks)]
            if args.notebooks is None:  # every notebook that asks for runs (00 asks for none)
                from ..protocol.plan import plan_series

                plan = plan_series(args.profile, notebook_paths(None))
                names = [nb.name for nb in plan.notebooks if nb.specs]
            if Path(args.file).suffix == pack.SUFFIX:
                manifest = pack.export(args.file, args.profile, names, weights=args.weights, name=args.name)
                print(pack.describe(manifest, Path(args.file).stat().st_size))
                print(f"wrote {args.file}")
            else:
                print(export_parts(args.file, args.profile, names, args.weights, args.name))
        elif args.pack_command == "migrate":
            from ..runs.migrate import migrate

            manifest = migrate(args.file, args.out)
            print(pack.describe(manifest, Path(args.out).stat().st_size))
            print(f"wrote {args.out}: {len(manifest['rekeyed'])} runs re-keyed to key scheme "
                  f"{manifest['key_scheme']}, none retrained")
        elif args.pack_command == "inspect":
            if parts.is_parts(args.file):
                index, _ = parts.read_parts(args.file)
                print(parts.describe_parts(index))
            else:
                print(pack.describe(pack.inspect(args.file), Path(args.file).stat().st_size))
        else:
            counts = pack.import_pack(args.file, replace=args.replace)
            print(f"pack {counts['manifest']['name']}: imported {counts['imported']} runs, kept "
                  f"{counts['kept']} already in the store" + (f", replaced {counts['replaced']}"
                                                              if args.replace else " (--replace replaces them)")
                  + (f"; {counts['stale']} stale runs not imported (a component's version bumped since "
                     "the pack was made)" if counts["stale"] else ""))
    except pack.PackError as exc:
        raise CommandError(str(exc)) from None
    return 0


def export_parts(folder: str, profile: str, names, weights: str, name) -> str:
    """Bring the pack of parts at ``folder`` up to date (:func:`mlpl_lab.runs.parts.export_parts`),
    each run grouped by the family whose sitting trained it (the store's sittings log,
    :func:`mlpl_lab.protocol.families.sitting_families`), else by the designed family that first asks
    for it; returns what changed, in words."""
    from ..protocol.families import sitting_families
    from ..protocol.plan import designed_families, run_families
    from ..runs import parts
    from ..runs.store import RunStore

    before = set()
    if parts.is_parts(folder):
        before = {p["file"] for p in parts.read_index(folder)["parts"]}
    paths = notebook_paths(names)
    family_of = run_families(profile, paths)
    family_of.update({k: v for k, v in sitting_families(RunStore()).items() if k in family_of})  # the sitting that trained it
    index = parts.export_parts(folder, profile, names, family_of,
                               weights=weights, name=name, families=designed_families(profile, paths))
    after = {p["file"] for p in index["parts"]}
    return (parts.describe_parts(index) + f"\n{folder}: {len(after - before)} parts written, "
            f"{len(after & before)} kept unchanged, {len(before - after)} removed")
