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
import gzip
import hashlib
import io
import json
import lzma
import os
import shutil
import tarfile
import time
import zlib
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from ..core.numerics import KEY_SCHEME, VERSIONS
from .access import accessed
from .components import versions_of
from .environment import git_commit
from .folders import PACK_FILE, DamagedRunError, read_run
from .spec import RunSpec
from .store import RunStore

#: the pack format this code writes; it reads this one and older
FORMAT = 1
#: what a manifest may weigh (it is read before anything is checked against it)
MAX_MANIFEST_BYTES = 64 * 2 ** 20
#: what a pack may unpack to in all
MAX_PACK_BYTES = 4 * 2 ** 30
#: the files of a run a pack carries (weights.pt only where chosen)
RUN_FILES = ("spec.json", "history.json", "summary.json", "weights.pt")
WEIGHTS = ("needed", "all", "none")
SUFFIX = ".mlplpack"


class PackError(RuntimeError):
    """A pack that cannot be exported or imported: the message names the problem and the fix."""


def _sha256(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


# ------------------------------------------------------------------------------------- export
def notebook_runs(store: RunStore, profile: str, notebooks: Sequence[str]) -> Dict[str, Dict[str, bool]]:
    """``{notebook: {key: weights loaded}}`` from the access logs; a notebook never run with
    ``mlpl-lab report --profile <profile>`` on this store is an error naming the command."""
    out = {}
    for nb in notebooks:
        runs = accessed(store.root, profile, nb)
        if not runs:
            raise PackError(f"notebook {nb} has not read any run of this store under profile {profile!r}: "
                            f"run `mlpl-lab report --profile {profile} --notebooks {nb}` first, so the "
                            "pack knows which runs (and which weights) it needs")
        out[nb] = runs
    return out


def starts_from(store: RunStore, key: str) -> List[str]:
    """The keys of the runs ``key``'s spec starts from (its first stage, its pretraining run, and
    theirs), read from its folder; empty where the folder holds no readable spec."""
    try:
        spec = RunSpec.from_dict(json.loads((store.root / key / "spec.json").read_text()))
    except (OSError, ValueError, KeyError, TypeError):
        return []
    out, todo = [], [spec]
    while todo:
        s = todo.pop()
        for dep in (s.init_from, s.backbone_from):
            if dep is not None and dep.key not in out:
                out.append(dep.key)
                todo.append(dep)
    return out


def wanted_runs(store: RunStore, profile: str, notebooks: Sequence[str], weights: str = "needed"
                ) -> Tuple[Dict[str, Dict[str, bool]], Dict[str, bool]]:
    """``(per notebook, {key: carry its weights})``: the runs ``notebooks`` read under ``profile``
    (:func:`notebook_runs`) and the runs they start from, each with whether a pack made with
    ``weights`` (``needed``: those a notebook loaded; ``all``; ``none``) carries its weights."""
    if weights not in WEIGHTS:
        raise PackError(f"--weights {weights!r}: choose one of {', '.join(WEIGHTS)}")
    per_notebook = notebook_runs(store, profile, notebooks)
    loaded: Dict[str, bool] = {}
    for runs in per_notebook.values():
        for key, was_loaded in runs.items():
            loaded[key] = loaded.get(key, False) or was_loaded
    for key in list(loaded):  # and the runs they start from (a series' plan asks for those too)
        for dep in starts_from(store, key):
            loaded.setdefault(dep, False)
    return per_notebook, {k: weights == "all" or (weights == "needed" and v) for k, v in loaded.items()}


def run_entry(store: RunStore, key: str, with_weights: bool,
              thin: Optional[Callable[[bytes, Dict[str, Any]], bytes]] = None
              ) -> Tuple[Dict[str, Any], Dict[str, bytes]]:
    """``(manifest entry, {file: bytes})`` of stored run ``key`` as a pack carries it (its weights
    when ``with_weights``; ``thin(history bytes, summary)`` rewrites the history where given). The
    run must be whole and keyed by this code's versions (else :class:`PackError` naming the fix)."""
    folder = store.root / key
    try:
        summary, spec, _ = read_run(folder)
    except (FileNotFoundError, DamagedRunError) as exc:
        raise PackError(f"run {key} that a notebook read is missing or damaged in {store.root} "
                        f"({exc}); run the report again, then export") from None
    run_spec = RunSpec.from_dict(spec)
    if run_spec.key != key:
        raise PackError(f"run {key}: its spec gives another key (made at other numerics "
                        "versions); run the report again, then export")
    if with_weights and "_pack" in summary and not (folder / "weights.pt").exists():
        raise PackError(f"run {key} came from a pack without its weights; retrain it or import a "
                        "pack that has them before exporting with them")
    files = {f: (folder / f).read_bytes() for f in RUN_FILES if f != "weights.pt" or with_weights}
    if thin is not None:
        files["history.json"] = thin(files["history.json"], summary)
    meta = {"key": key, "describe": summary.get("describe"), "spec": spec,
            "components": versions_of(run_spec), "seconds": summary.get("seconds"),
            "environment": summary.get("environment"),
            "commit": summary.get("commit"), "created": summary.get("created"),
            "weights": with_weights}
    return meta, files


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


def write_pack(path: Path, manifest: Dict[str, Any], members: Dict[str, bytes],
               check: Optional[Callable[[Path], None]] = None, compression: str = "gz") -> None:
    """Write ``manifest`` and ``members`` as a pack at ``path`` atomically (a temporary file, then
    one rename; ``check(tmp)`` may refuse the written file before the rename). The bytes are a
    function of ``manifest``, ``members`` and ``compression`` alone (:func:`pack_bytes`)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        tmp.write_bytes(pack_bytes(manifest, members, compression))
        if check is not None:
            check(tmp)
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


#: the compressions a pack may use: gzip (single-file packs) and xz (the shipped pack's parts)
COMPRESSIONS = ("gz", "xz")
#: the xz preset of a pack's parts (:func:`pack_bytes`; benchmarks/bench_pack_parts.py measured the choice)
XZ_PRESET = 6


def pack_bytes(manifest: Dict[str, Any], members: Dict[str, bytes], compression: str = "gz") -> bytes:
    """A pack's bytes: a tar (manifest.json, manifest.sha256, then the members sorted by name; every
    time stamp, owner and mode fixed) compressed with ``compression`` (no file name or time in the
    header). The same manifest and members give the same bytes."""
    if compression not in COMPRESSIONS:
        raise PackError(f"compression {compression!r}: choose one of {', '.join(COMPRESSIONS)}")
    text = json.dumps(manifest, indent=1, sort_keys=True).encode()
    buf = io.BytesIO()
    outer = (lzma.LZMAFile(buf, mode="wb", format=lzma.FORMAT_XZ, preset=XZ_PRESET) if compression == "xz"
             else gzip.GzipFile(filename="", fileobj=buf, mode="wb", mtime=0))
    with outer, tarfile.open(fileobj=outer, mode="w|", format=tarfile.PAX_FORMAT) as tar:
        for member, data in [("manifest.json", text),
                             ("manifest.sha256", _sha256(text).encode())] + sorted(members.items()):
            info = tarfile.TarInfo(member)
            info.size, info.mtime, info.mode = len(data), 0, 0o644
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _decompressed(raw) -> Any:
    """A reader of the decompressed stream of ``raw`` (a binary file), by its magic bytes: xz or gzip."""
    head = raw.read(6)
    raw.seek(0)
    if head == b"\xfd7zXZ\x00":
        return lzma.LZMAFile(raw, mode="rb", format=lzma.FORMAT_XZ)
    return gzip.GzipFile(fileobj=raw, mode="rb")


def _exporter_environment(runs_meta: List[Dict[str, Any]]) -> Dict[str, Any]:
    """The environments the runs were made in, summarised (one value, or the values seen)."""
    out: Dict[str, Any] = {}
    for field in ("torch", "device", "amp_dtype", "threads"):
        seen = sorted({str((r.get("environment") or {}).get(field)) for r in runs_meta
                       if (r.get("environment") or {}).get(field) is not None})
        if seen:
            out[field] = seen[0] if len(seen) == 1 else seen
    return out


# ------------------------------------------------------------------------------------- reading
class _Capped(io.RawIOBase):
    """A stream that refuses to yield more than ``limit`` bytes (raised on the read past it)."""

    def __init__(self, inner, limit: int):
        self.inner, self.limit, self.count = inner, limit, 0

    def readable(self) -> bool:
        return True

    def readinto(self, b) -> int:
        data = self.inner.read(len(b))
        self.count += len(data)
        if self.count > self.limit:
            raise PackError(f"the pack unpacks to more than its manifest declares ({self.limit} bytes): "
                            "refused (damaged, or an archive bomb)")
        b[:len(data)] = data
        return len(data)


def _check_name(member: tarfile.TarInfo) -> None:
    name = member.name
    parts = PurePosixPath(name).parts
    if name.startswith("/") or (parts and parts[0].endswith(":")) or "\\" in name:
        raise PackError(f"member {name!r} has an absolute path: refused (a pack holds relative paths only)")
    if ".." in parts:
        raise PackError(f"member {name!r} climbs out of the pack with '..': refused")
    if member.issym() or member.islnk():
        raise PackError(f"member {name!r} is a link: refused (a pack holds plain files only)")
    if not member.isfile():
        raise PackError(f"member {name!r} is not a plain file (a device, fifo or folder): refused")


def read_pack(path: str | os.PathLike, data: Optional[bytes] = None) -> Dict[str, Any]:
    """The verified contents of a pack: ``{"manifest": ..., "members": {name: bytes}}``. Raises
    :class:`PackError` naming the first problem; reads only what the manifest declares. ``data``:
    the pack's bytes, already read (``path`` then only names it in messages)."""
    path = Path(path)
    if data is None and not path.is_file():
        raise PackError(f"{path}: no such pack file")
    members: Dict[str, bytes] = {}
    manifest: Optional[Dict[str, Any]] = None
    declared: Dict[str, Dict[str, Any]] = {}
    try:
        with (open(path, "rb") if data is None else io.BytesIO(data)) as raw:
            capped = _Capped(_decompressed(raw), MAX_MANIFEST_BYTES + 4096)
            with tarfile.open(fileobj=io.BufferedReader(capped, 1 << 16), mode="r|") as tar:
                for i, member in enumerate(tar):
                    _check_name(member)
                    if i == 0 and member.name != "manifest.json":
                        raise PackError(f"the first member is {member.name!r}, not manifest.json: not a run pack")
                    if i == 1 and member.name != "manifest.sha256":
                        raise PackError("the manifest's checksum (manifest.sha256) is missing: not a run pack")
                    if i >= 2:
                        want = declared.get(member.name)
                        if want is None:
                            raise PackError(f"member {member.name!r} is not listed in the manifest: refused")
                        if member.size != want["size"]:
                            raise PackError(f"member {member.name!r} is {member.size} bytes, the manifest says "
                                            f"{want['size']}: refused before unpacking it")
                        if member.name in members:
                            raise PackError(f"member {member.name!r} appears twice: refused")
                    elif member.size > MAX_MANIFEST_BYTES:
                        raise PackError(f"the manifest is {member.size} bytes (at most {MAX_MANIFEST_BYTES}): refused")
                    f = tar.extractfile(member)
                    data = f.read() if f is not None else b""
                    if len(data) != member.size:
                        raise PackError(f"member {member.name!r} is truncated")
                    if i == 0:
                        text = data
                    elif i == 1:
                        if data.decode(errors="replace").strip() != _sha256(text):
                            raise PackError("manifest.json does not match its sha256: the pack is damaged")
                        manifest = _parse_manifest(text)
                        declared = manifest["members"]
                        total = sum(int(m["size"]) for m in declared.values())
                        if total > MAX_PACK_BYTES:
                            raise PackError(f"the manifest declares {total} bytes (at most {MAX_PACK_BYTES}): refused")
                        # headers and padding: at most 3 blocks of 512 bytes a member, and the end blocks
                        capped.limit = capped.count + total + 1536 * (len(declared) + 4) + 20 * 512
                    else:
                        if _sha256(data) != declared[member.name]["sha256"]:
                            raise PackError(f"member {member.name!r} does not match its sha256: the pack is damaged")
                        members[member.name] = data
    except PackError:
        raise
    except (tarfile.TarError, EOFError, OSError, zlib.error, lzma.LZMAError, gzip.BadGzipFile,
            UnicodeDecodeError) as exc:
        raise PackError(f"{path} is damaged or truncated, or not a run pack ({type(exc).__name__}: "
                        f"{str(exc) or 'unexpected end'}); get the file again") from None
    if manifest is None:
        raise PackError(f"{path} holds no manifest: not a run pack")
    missing = sorted(set(declared) - set(members))
    if missing:
        raise PackError(f"the pack is truncated: {len(missing)} member(s) the manifest lists are missing "
                        f"({missing[0]}, ...); get the file again")
    return {"manifest": manifest, "members": members}


def _parse_manifest(text: bytes) -> Dict[str, Any]:
    try:
        manifest = json.loads(text)
        fmt = int(manifest["format"])
    except (ValueError, KeyError, TypeError) as exc:
        raise PackError(f"the manifest cannot be read ({type(exc).__name__}: {exc}): not a run pack") from None
    if fmt > FORMAT:
        raise PackError(f"the pack has format {fmt}, made by a newer mlpl_lab; this one reads format "
                        f"{FORMAT} and older: update mlpl_lab")
    for field in ("name", "runs", "members"):
        if field not in manifest:
            raise PackError(f"the manifest has no {field!r}: not a run pack")
    return manifest


def scheme_of(manifest: Dict[str, Any]) -> int:
    """The key scheme of a pack's manifest (1: one ``numerics_version`` for the whole lab)."""
    return int(manifest.get("key_scheme", 1))


def check_scheme(manifest: Dict[str, Any], path: Any = None) -> None:
    """Refuse a manifest of another key scheme, naming the fix."""
    scheme = scheme_of(manifest)
    if scheme == KEY_SCHEME and isinstance(manifest.get("versions"), dict):
        return
    if scheme == 1:
        raise PackError(f"pack {manifest['name']!r} uses key scheme 1 (one numerics version for the whole lab, "
                        f"version {manifest.get('numerics_version')}); this code keys runs by the versions of "
                        f"their components (key scheme {KEY_SCHEME}). Migrate it, without retraining: "
                        f"`mlpl-lab pack migrate {path or 'OLD.mlplpack'} NEW.mlplpack`, then use the new file")
    if scheme > KEY_SCHEME:
        raise PackError(f"pack {manifest['name']!r} uses key scheme {scheme}, made by a newer mlpl_lab; this "
                        f"one computes key scheme {KEY_SCHEME}: update mlpl_lab")
    raise PackError(f"pack {manifest['name']!r}: key scheme {scheme} without its versions: not a run pack")


def stale_components(meta: Dict[str, Any], versions: Dict[str, int] = VERSIONS) -> List[str]:
    """The components whose version in ``versions`` differs from the one run ``meta`` (a manifest's
    entry) was made at: empty where the run is current."""
    made = meta.get("components") or {}
    return sorted(c for c, v in made.items() if versions.get(c) != v)


def _verify_runs(pack: Dict[str, Any], scheme_1_numerics: Optional[int] = None) -> List[Dict[str, Any]]:
    """Every run whole, its key its spec's key (under the manifest's versions), its weights
    loadable with weights_only=True; each run ``stale`` (with the components) where this code's
    versions differ. ``scheme_1_numerics``: read a key scheme 1 pack of that numerics version
    (what :mod:`mlpl_lab.runs.migrate` does)."""
    import torch

    manifest, members = pack["manifest"], pack["members"]
    if scheme_1_numerics is None:
        check_scheme(manifest)
    runs = []
    for meta in manifest["runs"]:
        key = str(meta["key"])
        if not key.isalnum():
            raise PackError(f"run key {key!r} is not a run key: refused")
        files = {f: members.get(f"runs/{key}/{f}") for f in RUN_FILES}
        for f in ("spec.json", "history.json", "summary.json"):
            if files[f] is None:
                raise PackError(f"run {key}: {f} is missing from the pack")
        try:
            spec = RunSpec.from_dict(json.loads(files["spec.json"]))
            summary = json.loads(files["summary.json"])
            history = json.loads(files["history.json"])["history"]
            history[int(summary["best_epoch"])]
        except (ValueError, KeyError, TypeError, IndexError) as exc:
            raise PackError(f"run {key}: unreadable records ({type(exc).__name__}: {exc})") from None
        try:
            made = (spec.scheme_1_key(scheme_1_numerics) if scheme_1_numerics is not None
                    else spec.key_at(manifest["versions"]))
        except (KeyError, ValueError) as exc:  # a method or component this code or the table lacks
            raise PackError(f"run {key}: {exc}; refused") from None
        if made != key or (scheme_1_numerics is None and dict(meta.get("components") or {})
                           != versions_of(spec, manifest["versions"])):
            raise PackError(f"run {key}: its key does not match its spec ({made}): the pack was edited "
                            "or made by other code; refused")
        if files["weights.pt"] is not None:
            if _sha256(files["weights.pt"]) != summary.get("weights_sha256"):
                raise PackError(f"run {key}: weights.pt does not match the sha256 its summary records")
            try:
                torch.load(io.BytesIO(files["weights.pt"]), map_location="cpu", weights_only=True)
            except Exception as exc:  # an unpickling error is the point: refuse anything else
                raise PackError(f"run {key}: weights.pt does not load with weights_only=True "
                                f"({type(exc).__name__}); refused") from None
        stale = stale_components(meta) if scheme_1_numerics is None else []
        runs.append({"key": key, "files": files, "meta": meta, "spec": spec, "stale": stale})
    keys = {r["key"] for r in runs}
    stray = [m for m in members if len(m.split("/")) != 3 or m.split("/")[0] != "runs"
             or m.split("/")[1] not in keys or m.split("/")[2] not in RUN_FILES]
    if stray:
        raise PackError(f"member {stray[0]!r} belongs to no run of the manifest: refused")
    return runs


def inspect(path: str | os.PathLike) -> Dict[str, Any]:
    """The verified manifest of a pack (of a pack of parts, its index: every part verified);
    nothing is written."""
    if Path(path).is_dir():
        from .parts import read_parts

        return read_parts(path)[0]
    pack = read_pack(path)
    _verify_runs(pack)
    return pack["manifest"]


def contents(path: str | os.PathLike) -> List[Dict[str, Any]]:
    """Every run of a pack (a single file, or a pack of parts), verified: ``{"key", "meta" (its
    manifest entry: spec, components, seconds, ...), "files" ({file: bytes or None})}``; nothing
    is written (what the benchmark scripts read the shipped pack's records with)."""
    if Path(path).is_dir():
        from .parts import read_parts

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
                keys: Optional[Iterable[str]] = None) -> Dict[str, Any]:
    """Verify the pack at ``path`` whole, then move its runs into the store; returns
    ``{"imported": n, "kept": n, "replaced": n, "stale": n, "manifest": ...}``. Nothing is written
    unless every check passes; a run already in the store is kept unless ``replace``; a stale run
    (a component bumped since the pack was made) is not imported. ``path`` may be a pack of parts
    (a folder, :mod:`mlpl_lab.runs.parts`): then each part is verified whole, and with ``keys``
    only the parts that hold one of them are read."""
    store = store or RunStore()
    if Path(path).is_dir():
        from .parts import read_parts

        manifest, runs = read_parts(path, keys)
    else:
        pack = read_pack(path)
        runs = _verify_runs(pack)
        manifest = pack["manifest"]
    store.root.mkdir(parents=True, exist_ok=True)
    stage = store.root / f".tmp-pack.{os.getpid()}.{time.time_ns()}"
    counts = {"imported": 0, "kept": 0, "replaced": 0, "stale": 0}
    try:
        stage.mkdir()
        staged = []
        for run in runs:
            key, folder = run["key"], stage / run["key"]
            if run["stale"]:
                counts["stale"] += 1
                continue
            exists = (store.root / key / "summary.json").exists()
            if exists and not replace:
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
