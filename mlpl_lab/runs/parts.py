"""A pack of immutable parts: the shipped course pack as a folder that git keeps cheaply.

A single-file pack (:mod:`mlpl_lab.runs.pack`) is written whole whenever one run joins it, and git
keeps every version of it. A pack of parts is a folder::

    pack.json                 the index: format 3, the pack's name, profile, when and at which commit
                              it was last exported, its key scheme, the notebooks it covers in full,
                              the claim families, and every part (file, size, sha256, notebook,
                              family, device kind, runs, the sha256 of its run list, the runs a
                              later part superseded)
    parts/<part>.mlplpart     a run pack of the single-file format, xz-compressed, holding the runs
                              of one designed family trained on one device kind
    parts/<part>.runs.json    the part's run list (key, the versions of its components, the seconds
                              it trained), written with the part and never again

**The index lists parts, not runs.** Every export commits the index again, so it holds only what
changes with the pack: the run list of a part lives beside the part and is as immutable as it is
(a function of the part's own manifest, :func:`run_list_text`). A pack that adds one family commits
one part, its run list and an index that grew by one line, not the 1,400 runs it already listed.
:func:`read_index` builds the runs from the run lists (each checked against its sha256 in the
index; minus the part's ``superseded``), so every reader sees the runs as before; format 2 indexes,
which list their runs themselves, are still read.

**Immutable parts.** A part's bytes are a function of its runs alone
(:func:`mlpl_lab.runs.pack.pack_bytes`): its manifest holds no export time or commit, only the
versions of the components its own runs use, and its file is named for its notebook, family,
device kind and the first hex digits of its sha256. :func:`export_parts` keeps every part of the
folder whose runs are all still wanted and would be written with the same bytes; only the runs
outside those parts are grouped (by the family that asks for them, :func:`group_key`) into new
parts. So exporting an unchanged pack changes no file, a family that joins adds its part, and a
family retrained replaces its part only; git's history grows by new runs only. A group larger than
:data:`TARGET_PART_BYTES` (estimated compressed) is split, so no part nears :data:`MAX_PART_BYTES`.

**Thinned histories.** A part carries what the notebooks read (:func:`thin_history`): every
epoch's scalar metrics, with the per-class AP lists kept at the best and the last epoch only (no
figure reads them elsewhere), and the floats of fields no claim or choice reads (losses, rates,
diagnostics, seconds; not ``val_*``/``test_*``) rounded to 6 significant digits.
``benchmarks/bench_pack_parts.py`` measured the layout (sizes in git, the import's seconds).

**A run that changes moves; its part stays.** When a run is retrained (same key, other bytes) or a
notebook now loads weights its part lacks, the run is written into a new part of its family and
the old part keeps its bytes: the index lists the old copy under the part's ``superseded`` and
reads the run from the new part. Only a part whose runs all changed, or one holding a run that
left the store, is written again. So retraining one run of a large family adds one small part
instead of committing its unchanged siblings again.

**Reading** (:func:`read_parts`) trusts nothing: the index's size and fields first (each part a
plain file name in ``parts/``, each run list matching its sha256, every run key listed once), then
each part it reads is checked against the size and sha256 the index gives *before* it is parsed,
verified whole like any pack (:func:`mlpl_lab.runs.pack.read_pack`,
:func:`~mlpl_lab.runs.pack._verify_runs`: member names, sizes, hashes, keys against specs, weights loadable with ``weights_only=True``), and must hold
exactly the runs the index lists for it and those it lists as superseded (never served). With
``keys`` only the parts that hold one of them are read, so a store that lacks one family's runs
reads that family's part.
"""
from __future__ import annotations

import datetime as _dt
import json
import math
import os
import re
import stat
import zlib
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

from ..core.numerics import KEY_SCHEME
from .environment import git_commit
from .pack_format import (FORMAT as PART_FORMAT, PackError, _exporter_environment, _sha256, _verify_runs,
                          pack_bytes, read_pack, run_entry, wanted_runs)
from .store import RunStore

#: the index format this code writes (it reads formats 2 and 3)
FORMAT = 3
INDEX = "pack.json"
PARTS = "parts"
SUFFIX = ".mlplpart"
#: the run list beside a part: ``parts/<stem>.runs.json`` for ``parts/<stem>.mlplpart``
RUN_LIST = ".runs.json"
#: no part file may be larger (refused on export and on import): git's history keeps every file
MAX_PART_BYTES = 8 * 2 ** 20
#: where a group of runs is split into several parts (estimated compressed size)
TARGET_PART_BYTES = 6 * 2 ** 20
#: what an index may weigh (it is read before anything is checked against it)
MAX_INDEX_BYTES = 16 * 2 ** 20
#: significant digits kept of the floats :func:`thin_history` rounds
DIGITS = 6
_PART_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,150}\.mlplpart$")


def is_parts(path: str | os.PathLike) -> bool:
    """Is ``path`` a pack of parts (a folder holding :data:`INDEX`)?"""
    return (Path(path) / INDEX).is_file()


# ------------------------------------------------------------------------------------- thinning
def _exact(field: str) -> bool:
    """Fields a claim, a choice or a convergence test reads: kept to the last digit."""
    return field.startswith(("val_", "test_"))


def _round(x: Any) -> Any:
    if isinstance(x, float) and math.isfinite(x) and x != 0.0:
        return float(f"{x:.{DIGITS}g}")
    return x


def thin_history(data: bytes, summary: Mapping[str, Any]) -> bytes:
    """A run's ``history.json`` as a part carries it: per-class lists (``val_AP``) at the best and
    the last epoch only, and the floats of fields other than ``val_*``/``test_*`` rounded to
    :data:`DIGITS` significant digits. Thinning a thinned history changes nothing."""
    hist = json.loads(data)
    rows = hist["history"]
    keep = {int(summary["best_epoch"]), len(rows) - 1}
    for i, row in enumerate(rows):
        for field in list(row):
            value = row[field]
            if isinstance(value, list) and i not in keep:
                del row[field]
            elif not _exact(field):
                row[field] = [_round(v) for v in value] if isinstance(value, list) else _round(value)
    hist["initial"] = {k: _round(v) for k, v in (hist.get("initial") or {}).items()}
    return json.dumps(hist, allow_nan=True, separators=(",", ":")).encode()


# ------------------------------------------------------------------------------------- export
def slug(text: str, limit: int = 60) -> str:
    """``text`` as a file-name fragment: lower-case ASCII letters, digits and dashes."""
    out = re.sub(r"[^a-z0-9]+", "-", text.lower().encode("ascii", "ignore").decode()).strip("-")
    return out[:limit].strip("-") or "runs"


def device_kind(environment: Mapping[str, Any] | None) -> str:
    """The device kind a run was trained on (``cpu``, ``cuda``, ...), from its environment."""
    return str((environment or {}).get("device") or "cpu").split(":")[0]


def group_key(notebook: str, family: str, device: str) -> Tuple[str, str, str]:
    return (notebook, family, device)


def _estimate(files: Mapping[str, bytes]) -> int:
    """A cheap upper estimate of a run's compressed size in a part (zlib at level 1; xz is smaller)."""
    return sum(len(zlib.compress(data, 1)) for data in files.values())


def _part_manifest(profile: str, group: Tuple[str, str, str], metas: List[Dict[str, Any]],
                   members: Dict[str, bytes]) -> Dict[str, Any]:
    notebook, family, device = group
    versions: Dict[str, int] = {}
    for meta in metas:
        versions.update(meta["components"])
    return {"format": PART_FORMAT, "name": f"{notebook} · {family} · {device}", "profile": profile,
            "notebook": notebook, "family": family, "device": device, "key_scheme": KEY_SCHEME,
            "versions": dict(sorted(versions.items())), "runs": metas,
            "environment": _exporter_environment(metas),
            "members": {m: {"size": len(b), "sha256": _sha256(b)} for m, b in sorted(members.items())}}


def _part_file(group: Tuple[str, str, str], data: bytes) -> str:
    notebook, family, device = group
    return f"{slug(notebook.split('_')[0], 8)}-{slug(family)}-{slug(device, 8)}-{_sha256(data)[:10]}{SUFFIX}"


def export_parts(folder: str | os.PathLike, profile: str, notebooks: Sequence[str],
                 family_of: Mapping[str, Tuple[str, str]], weights: str = "needed",
                 store: RunStore | None = None, name: str | None = None,
                 families: Optional[Mapping[str, Any]] = None) -> Dict[str, Any]:
    """Write (or bring up to date) the pack of parts at ``folder`` with the runs ``notebooks`` read
    under ``profile``; returns the index. ``family_of``: ``{key: (notebook, family)}``, the designed
    family that asks for each run (a run it does not name goes to its notebook's ``other`` part).

    A part already in ``folder`` whose runs are all wanted, with the same bytes, is kept as it is,
    and so is one holding runs no notebook reads any more (a row now read at its pilot's length
    leaves its shorter runs behind) as long as the store still holds them unchanged, or carrying
    weights no notebook loads now: an unread run stays in the pack with its part. A run of a kept
    part that changed (retrained) or now needs weights the part lacks moves to a new part and is
    listed under the old part's ``superseded`` (the old part keeps its bytes); a part is replaced
    only when all its runs changed, or one left the store.
    The other runs form new parts, one per family and device kind (split past
    :data:`TARGET_PART_BYTES`); parts no longer listed are deleted after the index is written.
    ``families`` (:func:`mlpl_lab.protocol.plan.designed_families`: ``{notebook: {family: {"m",
    "members_sha"}}}``, from the designs) is the index's ``families`` block, the claim families
    declared before any result (None keeps the block the index has). The index is rewritten only
    when its parts, notebooks or families change; the parts' bytes never depend on the families."""
    store = store or RunStore()
    folder = Path(folder)
    per_notebook, wanted = wanted_runs(store, profile, notebooks, weights)
    entries: Dict[str, Tuple[Dict[str, Any], Dict[str, bytes]]] = {
        key: run_entry(store, key, wanted[key], thin_history) for key in sorted(wanted)}
    old = read_index(folder) if is_parts(folder) else None
    parts: List[Dict[str, Any]] = []
    part_keys: Dict[str, List[str]] = {}
    for part in (old or {}).get("parts", []):
        keys = [r["key"] for r in old["runs"] if r["part"] == part["file"]]
        unread = [k for k in keys if k not in entries]
        lighter = [k for k in keys if k in entries and not entries[k][0]["weights"]]
        kept = dict(entries) | _as_carried(store, folder, part, unread) \
            | _as_carried(store, folder, part, lighter, weighted_only=True)
        if not keys or not all(k in kept for k in keys):
            continue  # a run left the store (or a part lists none): the part is written again
        same = _same_runs(folder, part, keys, kept)
        moved = [k for k in keys if k not in same]
        if len(moved) == len(keys) or any(k not in entries for k in moved):
            continue  # every run changed, or one no notebook reads: the part is written again
        if moved:  # the part stays as it is; the runs that changed or need weights move to a new part
            part = dict(part, n_runs=len(keys) - len(moved),
                        superseded=sorted(set(part.get("superseded", [])) | set(moved)))
        parts.append(part)
        part_keys[part["file"]] = [k for k in keys if k in same]
        entries.update({k: kept[k] for k in keys if k in same})
    placed = {k for keys in part_keys.values() for k in keys}
    groups: Dict[Tuple[str, str, str], List[str]] = {}
    for key, (meta, _) in entries.items():
        if key not in placed:
            notebook, family = family_of.get(key, (_first_notebook(key, per_notebook), "other"))
            groups.setdefault(group_key(notebook, family, device_kind(meta.get("environment"))), []).append(key)
    (folder / PARTS).mkdir(parents=True, exist_ok=True)
    for group, keys in sorted(groups.items()):
        for chunk in _chunks(keys, entries):
            part = _write_part(folder, profile, group, chunk, entries)
            parts.append(part)
            part_keys[part["file"]] = chunk
    parts = sorted((_with_run_list(folder, p, part_keys, entries) for p in parts), key=lambda p: p["file"])
    runs = sorted(({"key": key, "components": entries[key][0]["components"], "part": file,
                    "seconds": entries[key][0]["seconds"]}
                   for file, keys in part_keys.items() for key in keys), key=lambda r: r["key"])
    notebooks_covered = {nb: {"runs": len(r), "weights": sum(wanted[k] for k in r)}
                         for nb, r in sorted(per_notebook.items())}
    if families is None:
        families = (old or {}).get("families")
    else:
        families = json.loads(json.dumps(families, sort_keys=True))
    if old is not None and old["parts"] == parts and old.get("notebooks") == notebooks_covered \
            and old["runs"] == runs and (name is None or old["name"] == name) and old.get("families") == families:
        index = old  # nothing changed: the index stays as it is, byte for byte
    else:
        now = _dt.datetime.now(_dt.timezone.utc)
        index = {"format": FORMAT, "name": name or f"{profile}-{now:%Y-%m-%d}", "profile": profile,
                 "created": now.isoformat(timespec="seconds"), "commit": git_commit(),
                 "key_scheme": KEY_SCHEME, "weights": weights,
                 "environment": _exporter_environment([e[0] for e in entries.values()]),
                 "notebooks": notebooks_covered, "parts": parts, "runs": runs}
        if families is not None:
            index["families"] = families
        _write_atomic(folder / INDEX, index_text({k: v for k, v in index.items() if k != "runs"}).encode())
    listed = {p["file"] for p in index["parts"]} | {run_list_name(p["file"]) for p in index["parts"]}
    for path in (folder / PARTS).iterdir():  # parts (and their run lists) no index lists: replaced or dropped
        if path.name not in listed:
            path.unlink()
    return index


def run_list_name(part_file: str) -> str:
    """The file name of a part's run list."""
    return part_file[: -len(SUFFIX)] + RUN_LIST


def run_list_text(metas: Iterable[Mapping[str, Any]]) -> str:
    """A part's run list as written: every run the part holds (superseded ones too), sorted by key,
    each as one compact JSON line ``{"components", "key", "seconds"}``. A function of the part's
    manifest alone, so it never changes while the part does not."""
    rows = sorted(({"components": dict(m.get("components") or {}), "key": str(m["key"]),
                    "seconds": m.get("seconds")} for m in metas), key=lambda r: r["key"])
    return _compact_rows(rows) + "\n"


def _with_run_list(folder: Path, part: Dict[str, Any], part_keys: Mapping[str, List[str]],
                   entries) -> Dict[str, Any]:
    """``part`` with ``runs_sha256``, its run list written beside it where it is missing: from the
    runs just written into a new part, else (a part an older index listed with its runs) from the
    part's own manifest."""
    path = folder / PARTS / run_list_name(part["file"])
    if part.get("runs_sha256") and path.is_file():
        return part
    if part.get("superseded"):
        metas = _read_part(folder, part)["manifest"]["runs"]
    else:
        metas = [entries[k][0] for k in part_keys[part["file"]]]
    data = run_list_text(metas).encode()
    if not (path.is_file() and path.read_bytes() == data):
        _write_atomic(path, data)
    return dict(part, runs_sha256=_sha256(data))


def _as_carried(store: RunStore, folder: Path, part: Dict[str, Any], keys: List[str],
                weighted_only: bool = False) -> Dict[str, Tuple[Dict[str, Any], Dict[str, bytes]]]:
    """The pack entries of ``keys`` (runs of ``part``), each as the part carries it (with its
    weights where the part has them), read from the store; ``{}`` when one of them is missing from
    the store or unreadable (the part is then written again). For runs no notebook reads now, and
    (``weighted_only``: only those the part carries with weights) for runs read now without their
    weights: a part is not rewritten because a notebook stopped loading weights it carries."""
    if not keys:
        return {}
    try:
        carried = {r["key"]: bool(r.get("weights")) for r in _read_part(folder, part)["manifest"]["runs"]}
        if weighted_only:
            keys = [k for k in keys if carried.get(k)]
        return {k: run_entry(store, k, carried.get(k, False), thin_history) for k in keys}
    except (PackError, OSError):
        return {}


def _first_notebook(key: str, per_notebook: Mapping[str, Mapping[str, bool]]) -> str:
    return next((nb for nb, runs in per_notebook.items() if key in runs), "other")


def _same_runs(folder: Path, part: Dict[str, Any], keys: List[str],
               entries: Mapping[str, Tuple[Dict[str, Any], Dict[str, bytes]]]) -> set:
    """The runs of ``keys`` the existing ``part`` holds exactly as they would be written now (the
    same record and the same members: a retrained run, or one now carried with its weights, is not
    among them); none when the part is damaged (it is written again)."""
    try:
        manifest = _read_part(folder, part)["manifest"]
    except PackError:
        return set()
    records = {r["key"]: r for r in manifest["runs"]}
    have: Dict[str, Dict[str, str]] = {}
    for member, v in manifest["members"].items():
        have.setdefault(member.split("/")[1] if member.startswith("runs/") else "", {})[member] = v["sha256"]
    return {k for k in keys if k in records and records[k] == entries[k][0]
            and have.get(k) == {f"runs/{k}/{f}": _sha256(data) for f, data in entries[k][1].items()}}


def _chunks(keys: List[str], entries) -> List[List[str]]:
    """``keys`` (sorted) cut where the estimated compressed size would pass :data:`TARGET_PART_BYTES`."""
    out: List[List[str]] = [[]]
    size = 0
    for key in keys:
        est = _estimate(entries[key][1])
        if out[-1] and size + est > TARGET_PART_BYTES:
            out.append([])
            size = 0
        out[-1].append(key)
        size += est
    return out


def _write_part(folder: Path, profile: str, group, keys: List[str], entries) -> Dict[str, Any]:
    metas = [entries[k][0] for k in keys]
    members = {f"runs/{k}/{f}": data for k in keys for f, data in entries[k][1].items()}
    data = pack_bytes(_part_manifest(profile, group, metas, members), members, "xz")
    if len(data) > MAX_PART_BYTES:
        raise PackError(f"the part of {group[0]} · {group[1]} is {len(data)} bytes, over {MAX_PART_BYTES}: "
                        f"a single run is larger than a part may be; export it with --weights none")
    file = _part_file(group, data)
    path = folder / PARTS / file
    if not (path.is_file() and path.read_bytes() == data):
        _write_atomic(path, data)
    notebook, family, device = group
    return {"file": file, "size": len(data), "sha256": _sha256(data), "notebook": notebook,
            "family": family, "device": device, "n_runs": len(keys)}


#: the index's lists written one compact entry per line: they are most of its bytes
ROW_LISTS = ("parts",)


def _compact_rows(entries: Sequence[Any]) -> str:
    """A JSON list with one compact, key-sorted entry per line (``[]`` when empty)."""
    lines = ",\n".join(json.dumps(e, sort_keys=True, separators=(",", ":")) for e in entries)
    return "[\n" + lines + "\n]" if entries else "[]"


def index_text(index: Mapping[str, Any]) -> str:
    """The index as written: sorted keys, one key per line, except the entries of ``parts``, one
    compact JSON object per line, so that a part joining diffs as one line. Every export commits the
    index again; the runs live in the parts' run lists (:func:`run_list_text`), not here."""
    rows = {k: index[k] for k in ROW_LISTS if k in index}
    marks = {k: f"\x00{k}\x00" for k in rows}
    text = json.dumps({**index, **marks}, indent=1, sort_keys=True)
    for k, entries in rows.items():
        text = text.replace(json.dumps(marks[k]), _compact_rows(entries), 1)
    return text + "\n"


def _write_atomic(path: Path, data: bytes) -> None:
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


# ------------------------------------------------------------------------------------- reading
def read_index(folder: str | os.PathLike) -> Dict[str, Any]:
    """The index of the pack of parts at ``folder``, its fields checked (nothing else is read)."""
    path = Path(folder) / INDEX
    try:
        st = path.lstat()
        if not stat.S_ISREG(st.st_mode):
            raise PackError(f"{path} is not a plain file: refused")
        if st.st_size > MAX_INDEX_BYTES:
            raise PackError(f"{path} is {st.st_size} bytes (at most {MAX_INDEX_BYTES}): refused")
        index = json.loads(path.read_bytes())
        fmt = int(index["format"])
        parts = index["parts"]
        files = [str(p["file"]) for p in parts]
        for p in parts:
            int(p["size"]), str(p["sha256"])
    except FileNotFoundError:
        raise PackError(f"{Path(folder)}: no {INDEX}, not a pack of parts") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise PackError(f"{path} cannot be read ({type(exc).__name__}: {exc}): the pack is damaged; "
                        "get it again") from None
    if fmt > FORMAT:
        raise PackError(f"{path} has format {fmt}, made by a newer mlpl_lab; this one reads format "
                        f"{FORMAT}: update mlpl_lab")
    bad = [f for f in files if not _PART_NAME.match(f)]
    if bad:
        raise PackError(f"{path} names the part {bad[0]!r}: a part is a plain file name ending {SUFFIX}; refused")
    if len(set(files)) != len(files):
        raise PackError(f"{path} lists a part twice: refused")
    if fmt >= 3:
        index["runs"] = runs = [r for p in parts for r in _run_list(Path(folder), p)]
        runs.sort(key=lambda r: str(r.get("key")))
    elif not isinstance(index.get("runs"), list):
        raise PackError(f"{path} cannot be read (format {fmt} lists no runs): the pack is damaged; get it again")
    else:
        runs = index["runs"]
    keys = [str(r.get("key")) for r in runs]
    if len(set(keys)) != len(keys) or not all(k.isalnum() for k in keys) \
            or not all(r.get("part") in set(files) for r in runs):
        raise PackError(f"{path}: a run is listed twice, is not a run key, or names no part of the index; refused")
    for p in parts:
        old = p.get("superseded", [])
        if not isinstance(old, list) or not all(isinstance(k, str) and k.isalnum() for k in old) \
                or len(set(old)) != len(old) or any(r["part"] == p["file"] and r["key"] in old for r in runs):
            raise PackError(f"{path}: part {p['file']} lists superseded runs that are not run keys, are "
                            "listed twice or are still read from it; refused")
    return index


def _run_list(folder: Path, part: Mapping[str, Any]) -> List[Dict[str, Any]]:
    """The runs ``part`` serves, from its run list (checked against the index's ``runs_sha256``
    before it is parsed), less those it lists as ``superseded``; each with its ``part``."""
    name = run_list_name(str(part["file"]))
    path = folder / PARTS / name
    try:
        st = path.lstat()
        if not stat.S_ISREG(st.st_mode) or st.st_size > MAX_INDEX_BYTES:
            raise PackError(f"the run list {name} is not a plain file under {MAX_INDEX_BYTES} bytes: refused")
        data = path.read_bytes()
    except FileNotFoundError:
        raise PackError(f"the run list {name} is missing from {folder / PARTS}; get the pack again") from None
    if _sha256(data) != part.get("runs_sha256"):
        raise PackError(f"the run list {name} does not match its sha256 in {INDEX}: the pack is damaged; "
                        "get it again")
    try:
        rows = json.loads(data)
        superseded = set(part.get("superseded", []))
        return [{"components": dict(r["components"]), "key": str(r["key"]), "part": str(part["file"]),
                 "seconds": r.get("seconds")} for r in rows if str(r["key"]) not in superseded]
    except (ValueError, KeyError, TypeError, AttributeError) as exc:
        raise PackError(f"the run list {name} cannot be read ({type(exc).__name__}): the pack is damaged; "
                        "get it again") from None


def _read_part(folder: Path, part: Mapping[str, Any]) -> Dict[str, Any]:
    """One part's verified contents (:func:`mlpl_lab.runs.pack.read_pack`), its file first checked
    against the size and sha256 the index gives."""
    path = Path(folder) / PARTS / part["file"]
    try:
        st = path.lstat()
    except FileNotFoundError:
        raise PackError(f"part {part['file']} is missing from {Path(folder) / PARTS}; get the pack again") from None
    if not stat.S_ISREG(st.st_mode):
        raise PackError(f"part {part['file']} is not a plain file (a link or a device): refused")
    if st.st_size != int(part["size"]) or st.st_size > MAX_PART_BYTES:
        raise PackError(f"part {part['file']} is {st.st_size} bytes, the index says {part['size']} "
                        f"(at most {MAX_PART_BYTES}): refused before reading it; get the pack again")
    data = path.read_bytes()
    if len(data) != int(part["size"]) or _sha256(data) != part["sha256"]:
        raise PackError(f"part {part['file']} does not match its sha256 in {INDEX}: the pack is damaged; "
                        "get it again")
    return read_pack(path, data=data)


def read_parts(folder: str | os.PathLike, keys: Optional[Iterable[str]] = None
               ) -> Tuple[Dict[str, Any], List[Dict[str, Any]]]:
    """``(index, verified runs)`` of the pack of parts at ``folder``: every part (or, with ``keys``,
    every part holding one of them) verified whole; each run as
    :func:`mlpl_lab.runs.pack._verify_runs` gives it, with its ``part``. Raises :class:`PackError`
    naming the first problem; nothing is written."""
    folder = Path(folder)
    index = read_index(folder)
    listed: Dict[str, List[Dict[str, Any]]] = {}
    for r in index["runs"]:
        listed.setdefault(r["part"], []).append(r)
    want = None if keys is None else set(keys)
    runs: List[Dict[str, Any]] = []
    for part in index["parts"]:
        mine = listed.get(part["file"], [])
        if want is not None and not any(r["key"] in want for r in mine):
            continue
        superseded = set(part.get("superseded", []))
        held = _verify_runs(_read_part(folder, part))
        verified = [run for run in held if run["key"] not in superseded]
        if sorted(r["key"] for r in held) != sorted([r["key"] for r in mine] + list(superseded)) or any(
                dict(run["meta"].get("components") or {}) != dict(r.get("components") or {})
                for run, r in zip(sorted(verified, key=lambda x: x["key"]), sorted(mine, key=lambda x: x["key"]))):
            raise PackError(f"part {part['file']} holds other runs than {INDEX} lists for it: the pack was "
                            "edited or is damaged; refused")
        for run in verified:
            run["part"] = part["file"]
        runs.extend(verified)
    return index, runs


def describe_parts(index: Mapping[str, Any]) -> str:
    """What ``mlpl-lab pack inspect`` prints of a pack of parts."""
    parts = index["parts"]
    by_device: Dict[str, int] = {}
    for p in parts:
        by_device[p["device"]] = by_device.get(p["device"], 0) + int(p["n_runs"])
    lines = [f"pack {index['name']} (parts, format {index['format']}, profile {index.get('profile')}), "
             f"exported {index.get('created')} at commit {str(index.get('commit'))[:12]}, key scheme "
             f"{index.get('key_scheme')}",
             f"{len(index['runs'])} runs in {len(parts)} parts, "
             f"{sum(int(p['size']) for p in parts) / 2 ** 20:.1f} MiB; trained on "
             + ", ".join(f"{d} ({n} runs)" for d, n in sorted(by_device.items())),
             "notebooks covered in full:"]
    for nb, n in sorted(index.get("notebooks", {}).items()):
        lines.append(f"  {nb}: {n['runs']} runs, {n['weights']} with weights")
    lines.append("parts:")
    for p in parts:
        moved = f"; {len(p['superseded'])} superseded by a later part" if p.get("superseded") else ""
        lines.append(f"  {p['file']}: {p['n_runs']} runs, {int(p['size']) / 2 ** 20:.2f} MiB "
                     f"({p['notebook']} · {p['family']}, {p['device']}{moved})")
    return "\n".join(lines)
