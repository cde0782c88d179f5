"""The shipped pack's layout, measured: one file or parts, gzip or xz, per family or per chapter.

For each layout, built here from the shipped cpu pack's own runs (verified through
``mlpl_lab.runs.pack.contents``, thinned as the parts carry them): the bytes in the tree, the
number of files and the largest, what git stores for them (``git hash-object -w`` into an empty
repository, ``git count-objects -v``), the bytes a family joining the pack adds to git's history
(the layout rewritten with one family more: the files that differ), and the seconds an import into
an empty store takes (``import_pack``, verification included; the median of ``--repeat``).

Usage::

    .venv/bin/python benchmarks/bench_pack_parts.py            # records/pack_parts_cpu.json
"""
from __future__ import annotations

import argparse
import datetime as _dt
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from records_io import write_record  # noqa: E402

PACK = ROOT / "data" / "packs" / "cpu-course"


def git_bytes(files) -> int:
    """What git stores for ``files`` as loose objects (zlib), in bytes."""
    with tempfile.TemporaryDirectory() as repo:
        subprocess.run(["git", "init", "-q", repo], check=True)
        for f in files:
            subprocess.run(["git", "-C", repo, "hash-object", "-w", str(f)], check=True, capture_output=True)
        out = subprocess.run(["git", "-C", repo, "count-objects", "-v"], capture_output=True, text=True).stdout
        return int(dict(line.split(": ") for line in out.splitlines())["size"]) * 1024


def build(folder: Path, layout: str, items, family_of, compression: str) -> list:
    """Write ``items`` (a pack's verified runs) in ``layout`` under ``folder``; returns the files."""
    from mlpl_lab.runs import pack, parts

    folder.mkdir(parents=True, exist_ok=True)
    groups = {}
    for item in items:
        meta = item["meta"]
        notebook, family = family_of[item["key"]]
        key = ("all",) if layout == "one file" else (notebook,) if layout == "per chapter" else (notebook, family)
        groups.setdefault(key, []).append(item)
    files = []
    for key, group in sorted(groups.items()):
        members = {f"runs/{i['key']}/{f}": data for i in group for f, data in i["files"].items() if data is not None}
        metas = [i["meta"] for i in group]
        manifest = parts._part_manifest("cpu", (key[0], key[-1], "cpu"), metas, members)
        data = pack.pack_bytes(manifest, members, compression)
        path = folder / f"{parts.slug('-'.join(key))}-{pack._sha256(data)[:10]}.{compression}"
        path.write_bytes(data)
        files.append(path)
    return files


def import_seconds(files, repeat: int) -> float:
    """Median seconds to read and verify every file (what an import into an empty store pays
    before it writes)."""
    from mlpl_lab.runs import pack

    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for f in files:
            pack._verify_runs(pack.read_pack(f))
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "records" / "pack_parts_cpu.json")
    args = ap.parse_args(argv)
    from mlpl_lab.runs import pack, parts

    index = parts.read_index(PACK)
    by_part = {p["file"]: (p["notebook"], p["family"]) for p in index["parts"]}
    family_of = {r["key"]: by_part[r["part"]] for r in index["runs"]}
    items = pack.contents(PACK)
    # the family that joins last: the largest of 07's scene families
    joining = max((f for f in set(family_of.values()) if f[1].startswith("scene families")),
                  key=lambda f: sum(1 for v in family_of.values() if v == f))
    before = [i for i in items if family_of[i["key"]] != joining]
    rows = []
    work = Path(tempfile.mkdtemp(prefix="pack-parts-"))
    try:
        for layout in ("one file", "per chapter", "per family"):
            for compression in ("gz", "xz"):
                tag = f"{layout}, {compression}"
                t0 = time.perf_counter()
                full = build(work / tag / "full", layout, items, family_of, compression)
                write_s = time.perf_counter() - t0
                old = build(work / tag / "before", layout, before, family_of, compression)
                added = [f for f in full if f.name not in {o.name for o in old}]
                sizes = [f.stat().st_size for f in full]
                rows.append({"layout": layout, "compression": compression, "files": len(full),
                             "bytes": sum(sizes), "largest_file_bytes": max(sizes),
                             "git_bytes": git_bytes(full),
                             "git_bytes_added_by_one_family": git_bytes(added) if added else 0,
                             "write_seconds": round(write_s, 1),
                             "import_read_verify_seconds": round(import_seconds(full, args.repeat), 2)})
                print(json.dumps(rows[-1]), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip()
    write_record(args.out, {"what": __doc__.split("\n\n")[0], "pack": str(PACK.relative_to(ROOT)),
                            "runs": len(items), "joining_family": " · ".join(joining),
                            "commit": commit, "date": _dt.date.today().isoformat(), "layouts": rows,
                            "chosen": "per family, xz (data/packs/cpu-course/)"})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
