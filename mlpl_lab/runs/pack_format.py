"""The run pack's format: one tar of run folders and a checksummed manifest, written and read.

What every pack shares -- a single ``*.mlplpack`` file (:mod:`mlpl_lab.runs.pack`) and each part of
a pack of parts (:mod:`mlpl_lab.runs.parts`): the manifest and member rules, the deterministic
writer (:func:`pack_bytes`: gzip or xz), the untrusting reader (:func:`read_pack`: names, sizes
and hashes checked before anything is used), the verification of every run against its spec
and this code's versions (:func:`_verify_runs`), and the runs a pack takes from a store
(:func:`wanted_runs`, :func:`run_entry`). The format itself is described in
:mod:`mlpl_lab.runs.pack`."""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import lzma
import os
import tarfile
import zlib
from pathlib import Path, PurePosixPath
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from ..core.numerics import KEY_SCHEME, VERSIONS
from .access import accessed
from .components import versions_of
from .folders import DamagedRunError, read_run
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
