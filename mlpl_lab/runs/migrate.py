"""Re-key a run pack of key scheme 1 to this code's keys, without retraining.

Under key scheme 1 a run's key hashed its spec and one numerics version for the whole lab; now it
hashes its spec and the versions of the components it uses (:mod:`mlpl_lab.runs.components`).
The numbers did not change: every component at version 1 computes what numerics version
:data:`~mlpl_lab.core.numerics.SCHEME_1_NUMERICS` computed. :func:`migrate` reads an old pack
**verified whole** (:func:`mlpl_lab.runs.pack.read_pack`: every member's size and sha256, every
run's old key against its spec and the pack's numerics version, its weights against their sha256
and loadable with ``weights_only=True``), gives every run its new key (``runs/<new key>/``;
``summary.json`` records the new key, the versions and the old key; spec, history and weights are
the same bytes), writes the new manifest (key scheme, versions, each run's components and
seconds, where it was migrated from), verifies the written file as an import would, and only then
renames it into place. A damaged input, or one of another numerics version, writes nothing.

    mlpl-lab pack migrate old-cpu-course.mlplpack /tmp/cpu-course.mlplpack
"""
from __future__ import annotations

import datetime as _dt
import json
import os
from pathlib import Path
from typing import Any, Dict

from ..core.numerics import KEY_SCHEME, SCHEME_1_NUMERICS, VERSIONS
from .components import versions_of
from .environment import git_commit
from .pack import (SUFFIX, PackError, _sha256, _verify_runs, check_scheme, read_pack, scheme_of,
                   write_pack)


def migrate(src: str | os.PathLike, dest: str | os.PathLike) -> Dict[str, Any]:
    """Write the key scheme 1 pack ``src`` re-keyed to this code's keys at ``dest``; returns
    the new manifest, with ``"rekeyed"``: ``{old key: new key}``. Nothing is written unless the
    whole input verifies and the output verifies as an import would."""
    src, dest = Path(src), Path(dest)
    if dest.suffix != SUFFIX:
        raise PackError(f"{dest}: name the migrated pack *{SUFFIX}")
    pack = read_pack(src)
    old = pack["manifest"]
    if scheme_of(old) == KEY_SCHEME:
        check_scheme(old)
        raise PackError(f"{src} already uses key scheme {KEY_SCHEME}: nothing to migrate")
    if scheme_of(old) != 1:
        check_scheme(old)
    numerics = int(old.get("numerics_version", -1))
    if numerics != SCHEME_1_NUMERICS:
        raise PackError(f"{src} was made at numerics version {numerics}; the components' versions here "
                        f"compute what numerics version {SCHEME_1_NUMERICS} did, so its runs cannot be "
                        "re-keyed: retrain them (`mlpl-lab report --cold`)")
    runs = _verify_runs(pack, scheme_1_numerics=numerics)
    members: Dict[str, bytes] = {}
    metas, rekeyed = [], {}
    for run in runs:
        spec, key = run["spec"], run["key"]
        new, versions = spec.key, versions_of(spec)
        if new in rekeyed.values():
            raise PackError(f"two runs of {src} map to the key {new}: refused")
        rekeyed[key] = new
        summary = json.loads(run["files"]["summary.json"])
        summary.pop("numerics", None)
        summary.update(key=new, key_scheme=KEY_SCHEME, versions=versions,
                       migrated_from={"key": key, "numerics_version": numerics})
        for f, data in run["files"].items():
            if data is not None:
                members[f"runs/{new}/{f}"] = (json.dumps(summary, indent=1, allow_nan=True).encode()
                                              if f == "summary.json" else data)
        meta = dict(run["meta"], key=new, components=versions, seconds=summary.get("seconds"),
                    migrated_from_key=key)
        metas.append(meta)
    now = _dt.datetime.now(_dt.timezone.utc)
    manifest = {k: v for k, v in old.items() if k not in ("numerics_version", "runs", "members")}
    manifest.update(key_scheme=KEY_SCHEME, versions=dict(VERSIONS), runs=metas,
                    members={m: {"size": len(b), "sha256": _sha256(b)} for m, b in sorted(members.items())},
                    migrated={"from_key_scheme": 1, "from_numerics_version": numerics,
                              "from_sha256": _file_sha256(src), "date": now.isoformat(timespec="seconds"),
                              "commit": git_commit()})

    def check(tmp: Path) -> None:  # the written file, read back as an import reads it
        back = read_pack(tmp)
        verified = _verify_runs(back)
        if sorted(r["key"] for r in verified) != sorted(rekeyed.values()) or any(r["stale"] for r in verified):
            raise PackError(f"the migrated pack does not verify as written: {dest} left as it was")

    write_pack(dest, manifest, members, check=check)
    return manifest | {"rekeyed": rekeyed}


def _file_sha256(path: Path) -> str:
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
