"""Run packs: one checksummed file that carries an instructor's runs to every student's store.

A pack is a gzip-compressed tar archive (``.mlplpack``) of run folders and a manifest::

    manifest.json          format, name, profile, date, commit, key scheme and the numerics
                           versions of every component (:data:`mlpl_lab.core.numerics.VERSIONS`),
                           the exporter's environment, every run (key, spec, the versions of the
                           components it uses, seconds, environment, commit, date, whether its
                           weights came along) and every member's size and sha256, and the
                           notebooks the pack covers in full
    manifest.sha256        the sha256 of manifest.json
    runs/<key>/spec.json, history.json, summary.json[, weights.pt]

**Export** (:func:`export`) takes the runs the named notebooks read when ``mlpl-lab report`` last
ran them on this store (:func:`mlpl_lab.runs.store.accessed`): records and curves of every run, and the
weights only of the runs whose weights a notebook loaded (Grad-CAM, attention maps, CLS pairs, PU
panels, predictions: ``--weights needed``, the default), of every run (``all``) or of none.

**Import** (:func:`import_pack`) treats the file as untrusted (it travels by mail, USB stick and
course web pages) and verifies everything before it writes anything: the manifest's format and
sha256, every member's name (no absolute path, no ``..``, no link, device or other non-file) and
its size against the manifest *before* it is read (no archive bomb: the decompressed stream is
capped at the manifest's total), every member's sha256, every run's key against its spec and the
versions the manifest names, and its weights loadable with ``weights_only=True`` (nothing else is
unpickled). A run whose components' versions differ from this code's is **stale**: verified, but
not imported (a bump re-keyed it; the pack's other runs are served). A pack of key scheme 1 (one
numerics version for the whole lab, before each component got its own version) is refused with the fix: ``mlpl-lab pack
migrate OLD NEW`` re-keys it without retraining (:mod:`mlpl_lab.runs.migrate`). The runs are staged in a temporary folder of
the store, then each is renamed into place; a failure anywhere leaves the store as it was. A run
already in the store is kept (a local run wins) unless ``replace=True``; importing twice changes
nothing. Imported runs are served in any environment, and their folder holds ``pack.json`` (the
pack's name, commit, date, the run's environment) so every notebook can say where its results
came from (:func:`provenance`).
"""
from __future__ import annotations

import datetime as _dt
import json
import os
import shutil
import time
from pathlib import Path
from typing import Any, Dict, Iterable, List, Optional, Sequence

from ..core.numerics import KEY_SCHEME, VERSIONS
from .environment import git_commit
from .folders import PACK_FILE
from .pack_format import (  # noqa: F401  (the format's names, read through this module too)
    COMPRESSIONS, FORMAT, MAX_MANIFEST_BYTES, MAX_PACK_BYTES, RUN_FILES, SUFFIX, WEIGHTS, XZ_PRESET, PackError,
    _Capped, _check_name, _decompressed, _exporter_environment, _parse_manifest, _sha256, _verify_runs,
    check_scheme, notebook_runs, pack_bytes, read_pack, run_entry, scheme_of, stale_components, starts_from,
    wanted_runs, write_pack)
from .parts import read_parts
from .store import RunStore


def export(path: str | os.PathLike, profile: str, notebooks: Sequence[str], weights: str = "needed",
           store: RunStore | None = None, name: str | None = None) -> Dict[str, Any]:
    """Write the runs ``notebooks`` read under ``profile`` to a pack at ``path``; returns the
    manifest. Every run must be whole in the store (a damaged or missing one is an error)."""
    if weights not in WEIGHTS:
        raise PackError(f"--weights {weights!r}: choose one of {', '.join(WEIGHTS)}")
    store = store or RunStore()
    path = Path(path)
    if path.suffix != SUFFIX:
        raise PackError(f"{path}: name the pack *{SUFFIX} (e.g. cpu-course{SUFFIX})")
    per_notebook, keys = wanted_runs(store, profile, notebooks, weights)
    members: Dict[str, bytes] = {}
    runs_meta = []
    for key in sorted(keys):
        meta, files = run_entry(store, key, keys[key])
        runs_meta.append(meta)
        members.update({f"runs/{key}/{f}": data for f, data in files.items()})
    now = _dt.datetime.now(_dt.timezone.utc)
    manifest = {
        "format": FORMAT, "name": name or f"{profile}-{now:%Y-%m-%d}", "profile": profile,
        "created": now.isoformat(timespec="seconds"), "commit": git_commit(),
        "key_scheme": KEY_SCHEME, "versions": dict(VERSIONS), "weights": weights,
        "environment": _exporter_environment(runs_meta),
        "notebooks": {nb: {"runs": len(r), "weights": sum(r.values())} for nb, r in per_notebook.items()},
        "runs": runs_meta,
        "members": {m: {"size": len(b), "sha256": _sha256(b)} for m, b in sorted(members.items())},
    }
    write_pack(path, manifest, members)
    return manifest


def inspect(path: str | os.PathLike) -> Dict[str, Any]:
    """The verified manifest of a pack (of a pack of parts, its index: every part verified);
    nothing is written."""
    if Path(path).is_dir():
        return read_parts(path)[0]
    pack = read_pack(path)
    _verify_runs(pack)
    return pack["manifest"]


def contents(path: str | os.PathLike) -> List[Dict[str, Any]]:
    """Every run of a pack (a single file, or a pack of parts), verified: ``{"key", "meta" (its
    manifest entry: spec, components, seconds, ...), "files" ({file: bytes or None})}``; nothing
    is written (what the benchmark scripts read the shipped pack's records with)."""
    if Path(path).is_dir():
        return read_parts(path)[1]
    return _verify_runs(read_pack(path))


def current_keys(manifest: Dict[str, Any]) -> List[str]:
    """The keys of a pack's runs this code serves: those whose components are at this code's
    versions (none for a pack of another key scheme)."""
    if scheme_of(manifest) != KEY_SCHEME:
        return []
    return [str(r["key"]) for r in manifest["runs"] if not stale_components(r)]


def missing(manifest: Dict[str, Any], keys) -> List[str]:
    """The run keys of ``keys`` a pack does not serve (sorted): what ``make report`` would train."""
    return sorted(set(keys) - set(current_keys(manifest)))


def describe(manifest: Dict[str, Any], size: int | None = None) -> str:
    """What ``mlpl-lab pack inspect`` prints: provenance, runs, sizes, notebooks covered."""
    env = manifest.get("environment", {})
    runs = manifest["runs"]
    weights = sum(bool(r.get("weights")) for r in runs)
    members = manifest["members"]
    lines = [f"pack {manifest['name']} (format {manifest['format']}, profile {manifest.get('profile')}), "
             f"made {manifest.get('created')} at commit {str(manifest.get('commit'))[:12]}, "
             + (f"key scheme {scheme_of(manifest)}, the versions of {len(manifest.get('versions', {}))} "
                f"components" + (f" ({len(runs) - len(current_keys(manifest))} runs stale: a component "
                                 "bumped since)" if len(current_keys(manifest)) < len(runs) else "")
                if scheme_of(manifest) == KEY_SCHEME else
                f"key scheme 1, numerics version {manifest.get('numerics_version')} (migrate it: "
                "`mlpl-lab pack migrate`)"),
             f"environment: torch {env.get('torch', '?')}, {env.get('device', '?')}, AMP "
             f"{env.get('amp_dtype', '?')}, {env.get('threads', '?')} thread(s)",
             f"{len(runs)} runs ({weights} with weights); {len(members)} files, "
             f"{sum(m['size'] for m in members.values()) / 2 ** 20:.1f} MiB unpacked"
             + (f", {size / 2 ** 20:.1f} MiB packed" if size is not None else ""),
             "notebooks covered in full:"]
    for nb, n in sorted(manifest.get("notebooks", {}).items()):
        lines.append(f"  {nb}: {n['runs']} runs, {n['weights']} with weights")
    return "\n".join(lines)


# ------------------------------------------------------------------------------------- import
def import_pack(path: str | os.PathLike, store: RunStore | None = None, replace: bool = False,
                keys: Optional[Iterable[str]] = None, replace_keys: Iterable[str] = ()) -> Dict[str, Any]:
    """Verify the pack at ``path`` whole, then move its runs into the store; returns
    ``{"imported": n, "kept": n, "replaced": n, "stale": n, "manifest": ...}``. Nothing is written
    unless every check passes; a run already in the store is kept unless ``replace`` (or its key is
    in ``replace_keys``: a copy from an earlier part, :func:`mlpl_lab.runs.shipped.outdated_copies`); a stale run
    (a component bumped since the pack was made) is not imported. ``path`` may be a pack of parts
    (a folder, :mod:`mlpl_lab.runs.parts`): then each part is verified whole, and with ``keys``
    only the parts that hold one of them are read."""
    store = store or RunStore()
    if Path(path).is_dir():
        manifest, runs = read_parts(path, keys)
    else:
        pack = read_pack(path)
        runs = _verify_runs(pack)
        manifest = pack["manifest"]
    store.root.mkdir(parents=True, exist_ok=True)
    stage = store.root / f".tmp-pack.{os.getpid()}.{time.time_ns()}"
    counts = {"imported": 0, "kept": 0, "replaced": 0, "stale": 0}
    replace_keys = set(replace_keys)
    try:
        stage.mkdir()
        staged = []
        for run in runs:
            key, folder = run["key"], stage / run["key"]
            if run["stale"]:
                counts["stale"] += 1
                continue
            exists = (store.root / key / "summary.json").exists()
            if exists and not (replace or key in replace_keys):
                counts["kept"] += 1
                continue
            folder.mkdir()
            for f, data in run["files"].items():
                if data is not None:
                    (folder / f).write_bytes(data)
            origin = {"name": manifest["name"], "commit": run["meta"].get("commit") or manifest.get("commit"),
                      "pack_commit": manifest.get("commit"), "created": manifest.get("created"),
                      "run_created": run["meta"].get("created"), "environment": run["meta"].get("environment"),
                      "weights": run["files"]["weights.pt"] is not None, "imported": time.time()}
            if run.get("part"):
                origin["part"] = run["part"]
            (folder / PACK_FILE).write_text(json.dumps(origin, indent=1, sort_keys=True))
            staged.append((key, folder, exists))
        for key, folder, exists in staged:  # every check passed: each run renamed into place
            final = store.root / key
            if exists:
                aside = store.root / f".old-{key}.{os.getpid()}.{time.time_ns()}"
                os.rename(final, aside)
                os.rename(folder, final)
                shutil.rmtree(aside, ignore_errors=True)
                counts["replaced"] += 1
            else:
                try:
                    os.rename(folder, final)
                    counts["imported"] += 1
                except OSError:  # another process stored this run meanwhile: a local run wins
                    counts["kept"] += 1
    finally:
        shutil.rmtree(stage, ignore_errors=True)
    return counts | {"manifest": manifest, "parts_read": len({r["part"] for r in runs if r.get("part")})}


# ------------------------------------------------------------------------------------- provenance
def provenance(runs: Iterable[Any]) -> str:
    """One line saying where results came from: the packs the imported runs came from (name,
    commit, torch, threads) and how many were trained in this store. ``runs``: stored runs (their
    :attr:`~mlpl_lab.runs.store.StoredRun.origin`) or origins (a dict, or None for a local run)."""
    packs: Dict[str, Dict[str, Any]] = {}
    local = 0
    for run in runs:
        origin = run if isinstance(run, dict) or run is None else getattr(run, "origin", None)
        if origin is None:
            local += 1
            continue
        p = packs.setdefault(origin["name"], {"n": 0, "commit": origin.get("pack_commit") or origin.get("commit"),
                                              "env": origin.get("environment") or {}})
        p["n"] += 1
    parts = []
    for name, p in sorted(packs.items()):
        env = p["env"]
        threads = env.get("threads")
        parts.append(f"pack {name} (commit {str(p['commit'])[:7]}, torch {env.get('torch', '?')}"
                     + (f", {threads} thread{'s' if threads != 1 else ''}" if threads is not None else "")
                     + f"): {p['n']} runs")
    if not packs:
        return f"results from runs trained in this store ({local} runs); no pack imported"
    return ("results from " + "; ".join(parts) + (f"; {local} runs trained here (a run trained here wins)"
                                                   if local else "")
            + "; retrain with `mlpl-lab report --fresh` (or `make report COLD=1`)")


def store_provenance(store: RunStore | None = None) -> str:
    """:func:`provenance` of every run in the store (what a notebook header says)."""
    store = store or RunStore()
    origins = []
    for key in store.keys():
        try:
            origins.append(json.loads((store.root / key / PACK_FILE).read_text()))
        except FileNotFoundError:
            origins.append(None)
        except (OSError, ValueError):
            continue  # a damaged run: the store reports it when it is read
    return provenance(origins)
