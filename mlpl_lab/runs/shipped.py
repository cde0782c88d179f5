"""The course pack shipped with the lab, served wherever a notebook runs.

``data/packs/<profile>-course/`` holds every run of a profile's course series, as a pack of immutable
parts (:mod:`mlpl_lab.runs.parts`: an index and one part per designed family; a single-file
``<profile>-course.mlplpack`` is read where a checkout has one instead). Both ways
into the notebooks use :func:`import_missing`: ``mlpl-lab report`` (``make report``) before it
executes them, and :func:`mlpl_lab.reporting.report.setup_notebook` at the top of every notebook,
so Run All in JupyterLab, papermill and nbconvert serve the same pack as ``make report``.

The check is cheap: the pack's index (``pack.json``, with the run list beside each part) gives
every run key; the store's keys are its folder names. Only when the store lacks a key the pack holds are the parts that hold the missing
keys read, verified whole and imported (:func:`mlpl_lab.runs.pack.import_pack`: a run already in
the store is kept — a run trained here wins), so a store with a student's own runs (a live
exercise, a smoke run) still gets the pack, a store that lacks one new family reads that family's
part, and a store that has it all pays a few ms per notebook. A store filled from an earlier pack
may hold a run whose part the pack has since superseded (the run now carried with the weights a
notebook loads, or retrained): that copy counts as lacking and is replaced (:func:`outdated_copies`).

Nothing is imported under ``--fresh`` / ``--cold`` (:data:`~mlpl_lab.runs.store.FRESH_ENV` set:
the series is retrained on purpose) or with ``MLPL_LAB_SHIPPED_PACK=off``.
"""
from __future__ import annotations

import gzip
import json
import os
import tarfile
import time
from pathlib import Path
from typing import Any, Dict, Optional, Set, Tuple

from .store import FRESH_ENV, RunStore

#: where the shipped packs live (a checkout's data/packs)
PACK_DIR = Path(__file__).resolve().parents[2] / "data" / "packs"
#: ``off`` (or 0/no/false): notebooks and reports never import the shipped pack
SHIPPED_ENV = "MLPL_LAB_SHIPPED_PACK"


class ShippedPackError(RuntimeError):
    """The shipped pack is damaged (the message names the file and the problem; nothing was written)."""


def shipped_pack(profile: Any) -> Optional[Path]:
    """The course pack shipped for ``profile`` (a name or a Profile), if any: the pack of parts
    ``data/packs/<profile>-course/``, else a single file ``<profile>-course.mlplpack``."""
    from .parts import is_parts

    name = getattr(profile, "name", profile)
    folder = PACK_DIR / f"{name}-course"
    if is_parts(folder):
        return folder
    path = PACK_DIR / f"{name}-course.mlplpack"
    return path if path.is_file() else None


_MANIFESTS: Dict[Tuple[str, int, int], Dict[str, Any]] = {}


def manifest_of(path: Path) -> Dict[str, Any]:
    """The pack's manifest (for a pack of parts, its index: :func:`mlpl_lab.runs.parts.read_index`),
    its sha256 checked (the first two members only: the runs are not read). Memoised on the
    file's path, size and modification time."""
    from .pack import PackError, _sha256, MAX_MANIFEST_BYTES
    from .parts import INDEX, is_parts, read_index

    if is_parts(path):
        st = (path / INDEX).stat()
        cache = (str(path / INDEX), st.st_size, st.st_mtime_ns)
        if cache not in _MANIFESTS:
            _MANIFESTS[cache] = read_index(path)
        return _MANIFESTS[cache]
    st = path.stat()
    cache = (str(path), st.st_size, st.st_mtime_ns)
    if cache not in _MANIFESTS:
        text = digest = None
        try:
            with open(path, "rb") as raw, gzip.GzipFile(fileobj=raw, mode="rb") as gz, \
                    tarfile.open(fileobj=gz, mode="r|") as tar:
                for member in tar:
                    if member.size > MAX_MANIFEST_BYTES or not member.isfile():
                        break
                    data = tar.extractfile(member).read()
                    if text is None:
                        if member.name != "manifest.json":
                            break
                        text = data
                    else:
                        digest = data.decode(errors="replace").strip() if member.name == "manifest.sha256" else None
                        break
        except (tarfile.TarError, EOFError, OSError, gzip.BadGzipFile) as exc:
            raise PackError(f"{path} cannot be read ({type(exc).__name__}: {exc})") from None
        if text is None or digest != _sha256(text):
            raise PackError(f"{path} has no manifest matching its sha256: the pack is damaged")
        _MANIFESTS[cache] = json.loads(text)
    return _MANIFESTS[cache]


def missing_keys(profile: Any, store: RunStore | None = None) -> Tuple[Optional[Path], Set[str]]:
    """``(shipped pack or None, keys it serves that the store lacks)``: the manifest against the
    store's folders, nothing verified or imported. A run made at components' versions other than
    this code's (stale: a bump re-keyed it) is not counted. A copy the store holds from an older
    part of the pack (:func:`outdated_copies`) counts as lacking."""
    path = shipped_pack(profile)
    if path is None:
        return None, set()
    from .pack import KEY_SCHEME, current_keys, scheme_of

    store = store or RunStore()
    manifest = manifest_of(path)
    # a pack of another key scheme: every run counts as missing, so the import says what to do
    held = (set(current_keys(manifest)) if scheme_of(manifest) == KEY_SCHEME
            else {str(r["key"]) for r in manifest["runs"]})
    return path, (held - set(store.keys())) | (outdated_copies(manifest, store) & held)


def outdated_copies(manifest: Dict[str, Any], store: RunStore) -> Set[str]:
    """Keys whose stored copy was imported from a part the pack has since superseded for that run
    (:func:`mlpl_lab.runs.parts.export_parts` moves a run that now needs its weights, or was
    retrained, to a new part and lists it under the old part's ``superseded``): a store filled from
    an earlier pack then holds the run without the weights a notebook now loads. Only those keys'
    copies are read; a run trained here (no pack origin) is never outdated."""
    from .folders import PACK_FILE

    moved = {k for part in manifest.get("parts") or () for k in part.get("superseded") or ()}
    if not moved:
        return set()
    now_in = {str(r["key"]): r.get("part") for r in manifest["runs"] if str(r["key"]) in moved}
    out = set()
    for key, part in now_in.items():
        try:
            origin = json.loads((store.root / key / PACK_FILE).read_text())
        except (OSError, ValueError):
            continue  # not in the store, or trained here: a local run wins
        if isinstance(origin, dict) and origin.get("part") and origin["part"] != part:
            out.add(key)
    return out


def disabled() -> Optional[str]:
    """Why nothing is imported now (``--fresh``/``--cold`` or ``MLPL_LAB_SHIPPED_PACK=off``), or None."""
    if os.environ.get(FRESH_ENV):
        return "every run is retrained (--fresh / --cold)"
    if os.environ.get(SHIPPED_ENV, "").strip().lower() in ("0", "off", "no", "false"):
        return f"{SHIPPED_ENV}=off"
    return None


def import_missing(profile: Any, store: RunStore | None = None) -> Optional[Dict[str, Any]]:
    """Import the shipped pack of ``profile`` when the store lacks any run it holds (verified
    whole first; a run already in the store is kept). Returns None when there is nothing to do
    (no pack, nothing missing, or :func:`disabled`), else ``{"imported", "replaced", "kept", "seconds",
    "path", "manifest", "line"}`` where ``line`` is the one line to print. A damaged pack raises
    :class:`ShippedPackError` (nothing written)."""
    from .pack import PackError, import_pack

    if disabled():
        return None
    store = store or RunStore()
    try:
        path, lacking = missing_keys(profile, store)
    except PackError as exc:
        raise ShippedPackError(f"the shipped course pack: {exc}") from None
    if path is None or not lacking:
        return None
    t0 = time.perf_counter()
    try:
        outdated = outdated_copies(manifest_of(path), store)
        counts = import_pack(path, store, keys=lacking, replace_keys=outdated)
    except PackError as exc:
        raise ShippedPackError(f"the shipped course pack {path}: {exc}") from None
    seconds = time.perf_counter() - t0
    manifest = counts["manifest"]
    kept, replaced = counts["kept"], counts["replaced"]
    line = (f"[mlpl-lab] the store lacked {len(lacking - outdated)} of the {len(manifest['runs'])} runs of the shipped course "
            f"pack {path.name} ({manifest['name']}): imported {counts['imported']}, "
            + (f"from {counts['parts_read']} of its {len(manifest['parts'])} parts, each verified whole, in "
               if manifest.get("parts") else "verified whole, in ")
            + f"{seconds:.1f} s"
            + (f"; replaced {replaced} {'copy' if replaced == 1 else 'copies'} taken from a part the pack has "
               "since superseded" if replaced else "")
            + (f"; kept the {kept} runs already here (a local run wins)" if kept else "")
            + f"; {SHIPPED_ENV}=off or `mlpl-lab report --cold` trains instead")
    return {"imported": counts["imported"], "replaced": replaced, "kept": kept, "seconds": seconds,
            "path": path, "manifest": manifest, "line": line}
