"""Run packs: export, inspect, import; a pack is untrusted input (issue 33).

Every refusal is checked the same way: a one-line error naming the problem, and the store left
exactly as it was (every path and byte). The hostile packs are written by hand here with tarfile
(the oracle does not use the pack module's writer)."""
from __future__ import annotations

import gzip
import hashlib
import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path
from typing import Dict

import pytest
import torch

from mlpl_lab.runs import ensure as run_ensure
from mlpl_lab.runs import pack, store

from mlpl_lab.runs.access import CHAPTER_ENV, PROFILE_ENV

from mlpl_lab.runs.environment import FOREIGN_ENV, ForeignRunError

from mlpl_lab.runs.folders import DamagedRunError
from mlpl_lab.core import numerics
from mlpl_lab.runs.migrate import migrate
from mlpl_lab.profiles import get_profile

P = get_profile("smoke", init="scratch")


def fake_run(st, spec, value=1.0, environment=None):
    history = [{"epoch": 1, "val_mAP": value, "test_mAP": value}, {"epoch": 2, "val_mAP": value + 1,
                                                                   "test_mAP": value + 2}]
    path = st.put(spec, history, 1, {"probe": 0.5}, {"networks": {"net": {"w": torch.full((3,), value)}}})
    if environment is not None:  # as if made on another machine
        summary = json.loads((path / "summary.json").read_text())
        summary["environment"] = environment
        (path / "summary.json").write_text(json.dumps(summary))
    return path


def snapshot(root: Path):
    """Every path under root with its bytes: 'the store untouched' means this is unchanged."""
    if not root.exists():
        return None
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None)
            for p in sorted(root.rglob("*"))}


@pytest.fixture
def source(tmp_path, monkeypatch):
    """A store with three runs that notebook '02_x' read under profile smoke (weights of one)."""
    st = store.RunStore(tmp_path / "source")
    specs = [P.spec("an", seed=s) for s in (0, 1)] + [P.spec("gr")]
    for i, spec in enumerate(specs):
        fake_run(st, spec, value=10.0 * (i + 1),
                 environment={"torch": "9.9.9", "device": "cuda", "amp_dtype": "bfloat16",
                              "world_size": 1, "threads": 1})
    monkeypatch.setenv(CHAPTER_ENV, "02_x")
    monkeypatch.setenv(PROFILE_ENV, "smoke")
    monkeypatch.setenv(FOREIGN_ENV, "serve")
    with pytest.warns(RuntimeWarning):
        runs = [st.get(s) for s in specs]
    runs[0].weights()
    monkeypatch.delenv(CHAPTER_ENV)
    monkeypatch.delenv(FOREIGN_ENV)
    return st, specs


@pytest.fixture
def exported(source, tmp_path):
    st, specs = source
    path = tmp_path / "course.mlplpack"
    manifest = pack.export(path, "smoke", ["02_x"], store=st, name="smoke-test")
    return path, manifest, specs


def test_export_then_import_into_an_empty_store_serves_the_same_records(exported, tmp_path, monkeypatch):
    """Bugs caught: records or curves lost or altered on the way; a foreign-made run refused after
    import (serving it is a pack's purpose); weights carried for runs no notebook loads."""
    path, manifest, specs = exported
    assert sum(r["weights"] for r in manifest["runs"]) == 1
    assert manifest["notebooks"] == {"02_x": {"runs": 3, "weights": 1}}
    dest = store.RunStore(tmp_path / "dest")
    counts = pack.import_pack(path, dest)
    assert (counts["imported"], counts["kept"]) == (3, 0)
    monkeypatch.setattr(run_ensure, "fit", lambda *a, **k: pytest.fail("trained"))
    src = store.RunStore(tmp_path / "source")
    for spec in specs:
        got = dest.get(spec)  # made with torch 9.9.9 on cuda: served without a ForeignRunError
        with pytest.raises(ForeignRunError):
            src.get(spec)  # the source store itself still refuses it (not imported there)
        monkeypatch.setenv(FOREIGN_ENV, "serve")
        with pytest.warns(RuntimeWarning):
            want = src.get(spec)
        monkeypatch.delenv(FOREIGN_ENV)
        assert got.history == want.history and got.best_epoch == want.best_epoch
        assert got.initial == want.initial and got.summary["test_mAP"] == want.summary["test_mAP"]
        assert got.origin["name"] == "smoke-test" and got.origin["environment"]["torch"] == "9.9.9"
    loaded = [s for s in specs if dest.get(s).origin["weights"]]
    assert len(loaded) == 1
    assert torch.equal(dest.get(loaded[0]).weights()["weights"]["networks"]["net"]["w"], torch.full((3,), 10.0))
    other = next(s for s in specs if not dest.get(s).origin["weights"])
    with pytest.raises(DamagedRunError, match="without its weights.*--weights all"):
        dest.get(other).weights()
    line = pack.provenance([dest.get(s) for s in specs])
    assert line.startswith("results from pack smoke-test (commit ") and "torch 9.9.9, 1 thread): 3 runs" in line
    assert "trained here" not in line
    fake_run(dest, P.spec("an", seed=5))
    assert "1 runs trained here (a run trained here wins)" in pack.store_provenance(dest)
    assert pack.store_provenance(store.RunStore(tmp_path / "empty")).endswith("no pack imported")


def test_importing_twice_changes_nothing_and_a_local_run_wins(exported, tmp_path):
    path, _, specs = exported
    dest = store.RunStore(tmp_path / "dest")
    local = fake_run(dest, specs[0], value=99.0)  # trained here before the import
    first = pack.import_pack(path, dest)
    assert (first["imported"], first["kept"]) == (2, 1)
    assert dest.get(specs[0]).best["test_mAP"] == 101.0 and dest.get(specs[0]).origin is None
    before = snapshot(dest.root)
    again = pack.import_pack(path, dest)
    assert (again["imported"], again["kept"]) == (0, 3)
    assert snapshot(dest.root) == before
    replaced = pack.import_pack(path, dest, replace=True)
    assert replaced["replaced"] == 3 and dest.get(specs[0]).origin["name"] == "smoke-test"
    assert local.exists()


def test_inspect_prints_provenance_runs_and_notebooks(exported):
    path, _, _ = exported
    text = pack.describe(pack.inspect(path), path.stat().st_size)
    assert "pack smoke-test" in text and "3 runs (1 with weights)" in text
    assert "02_x: 3 runs, 1 with weights" in text and f"key scheme {numerics.KEY_SCHEME}" in text
    assert "torch 9.9.9" in text


def test_export_names_the_missing_report(source, tmp_path):
    st, _ = source
    with pytest.raises(pack.PackError, match="run `mlpl-lab report --profile smoke --notebooks 03_y` first"):
        pack.export(tmp_path / "p.mlplpack", "smoke", ["03_y"], store=st)
    with pytest.raises(pack.PackError, match="name the pack"):
        pack.export(tmp_path / "p.zip", "smoke", ["02_x"], store=st)


# ------------------------------------------------------------------- hostile or damaged packs
def members_of(path: Path):
    """(TarInfo, bytes) of every member of a pack, read with plain tarfile (the oracle)."""
    with tarfile.open(path, "r:gz") as tar:
        return [(m, tar.extractfile(m).read() if m.isfile() else b"") for m in tar.getmembers()]


def write(path: Path, members, fix_manifest: bool = True) -> Path:
    """A pack written by hand; with ``fix_manifest`` the manifest's checksum is recomputed (so the
    check under test is the one that fires)."""
    members = list(members)
    if fix_manifest:
        text = dict((m.name, d) for m, d in members)["manifest.json"]
        members = [(m, hashlib.sha256(text).hexdigest().encode() if m.name == "manifest.sha256" else d)
                   for m, d in members]
    with gzip.open(path, "wb") as gz, tarfile.open(fileobj=gz, mode="w|") as tar:
        for info, data in members:
            if info.isfile():
                info = tarfile.TarInfo(info.name)
                info.size = len(data)
                tar.addfile(info, io.BytesIO(data))
            else:
                tar.addfile(info)
    return path


def edit_manifest(members, change):
    out = []
    for m, d in members:
        if m.name == "manifest.json":
            man = json.loads(d)
            change(man)
            d = json.dumps(man).encode()
            m = tarfile.TarInfo("manifest.json")
        out.append((m, d))
    return out


def refused(path, dest, match):
    before = snapshot(dest.root)
    with pytest.raises(pack.PackError, match=match) as err:
        pack.import_pack(path, dest)
    assert "\n" not in str(err.value)
    assert snapshot(dest.root) == before
    return err


@pytest.fixture
def dest(tmp_path):
    d = store.RunStore(tmp_path / "dest")
    d.root.mkdir()
    return d


def test_a_flipped_byte_is_refused_and_the_store_untouched(exported, dest, tmp_path):
    path, _, _ = exported
    data = bytearray(path.read_bytes())
    for where in (len(data) // 3, len(data) // 2, len(data) - 12):
        bad = bytearray(data)
        bad[where] ^= 0x01
        (tmp_path / "bad.mlplpack").write_bytes(bytes(bad))
        refused(tmp_path / "bad.mlplpack", dest, "damaged|truncated|sha256")


def test_a_truncated_pack_is_refused_and_the_store_untouched(exported, dest, tmp_path):
    path, _, _ = exported
    data = path.read_bytes()
    for cut in (10, len(data) // 2, len(data) - 30):
        (tmp_path / "cut.mlplpack").write_bytes(data[:cut])
        refused(tmp_path / "cut.mlplpack", dest, "damaged or truncated|truncated")


def test_a_member_whose_hash_differs_is_refused(exported, dest, tmp_path):
    path, _, _ = exported
    members = members_of(path)
    name = next(m.name for m, _ in members if m.name.endswith("history.json"))
    altered = [(m, d.replace(b"1", b"7") if m.name == name else d) for m, d in members]
    altered = edit_manifest(altered, lambda man: man["members"][name].update(
        size=len(dict((m.name, d) for m, d in altered)[name])))
    refused(write(tmp_path / "h.mlplpack", altered), dest, f"{name}.*does not match its sha256")


def test_a_manifest_from_a_newer_format_is_refused(exported, dest, tmp_path):
    path, _, _ = exported
    newer = edit_manifest(members_of(path), lambda man: man.update(format=pack.FORMAT + 1))
    refused(write(tmp_path / "n.mlplpack", newer), dest, "newer mlpl_lab.*update mlpl_lab")


def test_a_manifest_that_does_not_match_its_checksum_is_refused(exported, dest, tmp_path):
    path, _, _ = exported
    edited = edit_manifest(members_of(path), lambda man: man.update(name="other"))
    refused(write(tmp_path / "m.mlplpack", edited, fix_manifest=False), dest, "manifest.json does not match")


def test_a_run_whose_key_does_not_match_its_spec_is_refused(exported, dest, tmp_path):
    path, _, _ = exported
    members = members_of(path)
    name = next(m.name for m, _ in members if m.name.endswith("spec.json"))
    spec = json.loads(dict((m.name, d) for m, d in members)[name])
    spec["seed"] = 7
    new = json.dumps(spec).encode()
    altered = [(m, new if m.name == name else d) for m, d in members]
    altered = edit_manifest(altered, lambda man: man["members"][name].update(
        size=len(new), sha256=hashlib.sha256(new).hexdigest()))
    refused(write(tmp_path / "k.mlplpack", altered), dest, "key does not match its spec")


def scheme_1_pack(path: Path, out: Path, numerics_version: int = 2) -> Dict[str, str]:
    """The pack at ``path`` as key scheme 1 wrote it (one numerics version, keys sha256(canonical
    spec + "numerics=N")), written by hand; returns ``{old key: this code's key}``."""
    members = dict((m.name, d) for m, d in members_of(path))
    manifest = json.loads(members.pop("manifest.json"))
    members.pop("manifest.sha256")
    old_of, out_members = {}, {}
    for meta in manifest["runs"]:
        canonical = json.dumps(meta["spec"], sort_keys=True, separators=(",", ":"))
        old = hashlib.sha256((canonical + f"numerics={numerics_version}").encode()).hexdigest()[:20]
        old_of[meta["key"]] = old
        for f in ("spec.json", "history.json", "summary.json", "weights.pt"):
            data = members.get(f"runs/{meta['key']}/{f}")
            if data is None:
                continue
            if f == "summary.json":
                summary = json.loads(data)
                for k in ("key_scheme", "versions"):
                    summary.pop(k)
                summary.update(key=old, numerics=numerics_version)
                data = json.dumps(summary).encode()
            out_members[f"runs/{old}/{f}"] = data
        meta["key"] = old
        meta.pop("components"), meta.pop("seconds")
    for k in ("key_scheme", "versions"):
        manifest.pop(k)
    manifest["numerics_version"] = numerics_version
    manifest["members"] = {m: {"size": len(d), "sha256": hashlib.sha256(d).hexdigest()}
                           for m, d in out_members.items()}
    text = json.dumps(manifest).encode()
    infos = [(tarfile.TarInfo("manifest.json"), text), (tarfile.TarInfo("manifest.sha256"), b"")]
    write(out, infos + [(tarfile.TarInfo(m), d) for m, d in sorted(out_members.items())])
    return {old: new for new, old in old_of.items()}


def test_a_pack_of_the_old_key_scheme_is_refused_naming_the_migration(exported, dest, tmp_path):
    """Bug caught: a pack keyed by the old single numerics version silently never served (every
    run retrained), or imported under keys this code does not compute."""
    path, _, _ = exported
    old = tmp_path / "old.mlplpack"
    scheme_1_pack(path, old)
    refused(old, dest, "key scheme 1.*Migrate it, without retraining: `mlpl-lab pack migrate")
    newer = edit_manifest(members_of(path), lambda man: man.update(key_scheme=numerics.KEY_SCHEME + 1))
    refused(write(tmp_path / "n.mlplpack", newer), dest, "newer mlpl_lab.*update mlpl_lab")


def test_migrate_rekeys_an_old_pack_without_retraining_and_every_run_is_served(exported, tmp_path):
    """Bugs caught: a migration that loses or alters a run (records, curves, weights), keeps the
    old keys, or serves nothing. Oracle: the old keys computed by hand (scheme_1_pack) and the
    records of the pack exported by this code."""
    path, manifest, specs = exported
    old = tmp_path / "old.mlplpack"
    new_of = scheme_1_pack(path, old)
    out = tmp_path / "migrated.mlplpack"
    migrated = migrate(old, out)
    assert migrated["rekeyed"] == new_of and sorted(new_of.values()) == sorted(s.key for s in specs)
    assert migrated["key_scheme"] == numerics.KEY_SCHEME and migrated["versions"] == numerics.VERSIONS
    assert "numerics_version" not in migrated and migrated["migrated"]["from_numerics_version"] == 2
    a, b = store.RunStore(tmp_path / "a"), store.RunStore(tmp_path / "b")
    assert pack.import_pack(path, a)["imported"] == pack.import_pack(out, b)["imported"] == 3
    for spec in specs:
        got, want = b.get(spec), a.get(spec)
        assert got is not None and got.history == want.history and got.best_epoch == want.best_epoch
        assert got.summary["versions"] == want.summary["versions"]
        assert got.summary["migrated_from"]["key"] in new_of
        assert got.origin["weights"] == want.origin["weights"]
        if got.origin["weights"]:
            assert torch.equal(got.weights()["weights"]["networks"]["net"]["w"],
                               want.weights()["weights"]["networks"]["net"]["w"])
    with pytest.raises(pack.PackError, match="already uses key scheme"):
        migrate(out, tmp_path / "again.mlplpack")
    assert not (tmp_path / "again.mlplpack").exists()


def test_migrate_writes_nothing_from_a_damaged_or_foreign_pack(exported, tmp_path):
    """Bug caught: a half-written or unverified migrated pack (shipped, then refused by every
    student's import)."""
    path, _, _ = exported
    old = tmp_path / "old.mlplpack"
    scheme_1_pack(path, old)
    data = old.read_bytes()
    out = tmp_path / "out.mlplpack"
    for where in (len(data) // 2, len(data) - 12):
        bad = bytearray(data)
        bad[where] ^= 0x01
        (tmp_path / "bad.mlplpack").write_bytes(bytes(bad))
        with pytest.raises(pack.PackError, match="damaged|truncated|sha256"):
            migrate(tmp_path / "bad.mlplpack", out)
        assert not out.exists() and not list(tmp_path.glob(".out.mlplpack*"))
    scheme_1_pack(path, tmp_path / "v1.mlplpack", numerics_version=1)
    with pytest.raises(pack.PackError, match="numerics version 1.*retrain"):
        migrate(tmp_path / "v1.mlplpack", out)
    assert not out.exists()


def test_a_bumped_component_leaves_its_runs_stale_and_serves_the_others(exported, dest, monkeypatch):
    """Bug caught: a pack refused whole (or served whole, stale) after one family's bump. Oracle:
    the pack holds two AN runs and one GR run (the source fixture); bumping GR's family leaves
    the AN runs current."""
    path, _, specs = exported
    monkeypatch.setitem(numerics.VERSIONS, "method.gr", numerics.VERSIONS["method.gr"] + 1)
    manifest = pack.inspect(path)
    assert sorted(pack.current_keys(manifest)) == sorted(s.key for s in specs if s.method == "an")
    counts = pack.import_pack(path, dest)
    assert (counts["imported"], counts["stale"]) == (2, 1)
    assert sorted(dest.keys()) == sorted(s.key for s in specs if s.method == "an")
    assert "1 runs stale" in pack.describe(manifest)


@pytest.mark.parametrize("name, kind, match", [
    ("/etc/evil", tarfile.REGTYPE, "absolute path"),
    ("runs/../../evil", tarfile.REGTYPE, r"'\.\.'"),
    ("runs/link", tarfile.SYMTYPE, "is a link"),
    ("runs/hard", tarfile.LNKTYPE, "is a link"),
    ("runs/dev", tarfile.CHRTYPE, "not a plain file"),
    ("runs/fifo", tarfile.FIFOTYPE, "not a plain file"),
])
def test_unsafe_members_are_refused(exported, dest, tmp_path, name, kind, match):
    path, _, _ = exported
    members = members_of(path)
    info = tarfile.TarInfo(name)
    info.type = kind
    if kind in (tarfile.SYMTYPE, tarfile.LNKTYPE):
        info.linkname = "/etc/passwd"
    data = b"x" if kind == tarfile.REGTYPE else b""
    hostile = edit_manifest(members + [(info, data)], lambda man: man["members"].update(
        {name: {"size": len(data), "sha256": hashlib.sha256(data).hexdigest()}}))
    refused(write(tmp_path / "u.mlplpack", hostile), dest, match)
    assert not (tmp_path / "evil").exists() and not Path("/etc/evil").exists()


def test_sizes_are_checked_before_unpacking_no_archive_bomb(exported, dest, tmp_path):
    """Bug caught: a member far larger than the manifest says, unpacked before the check (a bomb:
    100 MB of zeros compress to ~100 KB)."""
    path, _, _ = exported
    members = members_of(path)
    name = next(m.name for m, _ in members if m.name.endswith("summary.json"))
    bomb = [(m, (b"\0" * (100 * 2 ** 20)) if m.name == name else d) for m, d in members]
    bad = write(tmp_path / "b.mlplpack", bomb)
    assert bad.stat().st_size < 2 * 2 ** 20
    refused(bad, dest, "manifest says")
    big = edit_manifest(members, lambda man: man["members"].update(
        {"runs/x/spec.json": {"size": pack.MAX_PACK_BYTES + 1, "sha256": "0" * 64}}))
    refused(write(tmp_path / "big.mlplpack", big), dest, "declares .* bytes")


def test_weights_that_need_unpickling_are_refused(exported, dest, tmp_path):
    """Bug caught: weights loaded with full pickle (a pack could run code on a student's laptop)."""
    path, _, _ = exported
    members = members_of(path)
    name = next(m.name for m, _ in members if m.name.endswith("weights.pt"))
    key = name.split("/")[1]

    class Evil:
        def __reduce__(self):
            return (os.system, ("echo pwned > " + str(tmp_path / "pwned"),))

    buf = io.BytesIO()
    torch.save({"weights": Evil()}, buf)
    evil = buf.getvalue()
    summary_name = f"runs/{key}/summary.json"
    summary = json.loads(dict((m.name, d) for m, d in members)[summary_name])
    summary["weights_sha256"] = hashlib.sha256(evil).hexdigest()
    new_summary = json.dumps(summary).encode()
    altered = [(m, evil if m.name == name else new_summary if m.name == summary_name else d) for m, d in members]
    altered = edit_manifest(altered, lambda man: man["members"].update({
        name: {"size": len(evil), "sha256": hashlib.sha256(evil).hexdigest()},
        summary_name: {"size": len(new_summary), "sha256": hashlib.sha256(new_summary).hexdigest()}}))
    refused(write(tmp_path / "w.mlplpack", altered), dest, "weights_only=True")
    assert not (tmp_path / "pwned").exists()


def test_not_a_pack_at_all(dest, tmp_path):
    (tmp_path / "x.mlplpack").write_bytes(b"hello, not a pack")
    refused(tmp_path / "x.mlplpack", dest, "damaged or truncated, or not a run pack")
    refused(tmp_path / "missing.mlplpack", dest, "no such pack file")


def test_the_cli_says_one_line_and_exits_non_zero(exported, tmp_path):
    """Bug caught: a traceback (or exit 0) instead of the one-line reason."""
    path, _, _ = exported
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    bad = tmp_path / "bad.mlplpack"
    bad.write_bytes(bytes(data))
    env = os.environ | {"MLPL_LAB_DATA": str(tmp_path / "cli-store")}
    out = subprocess.run([sys.executable, "-m", "mlpl_lab.cli", "pack", "import", str(bad)],
                         capture_output=True, text=True, env=env)
    assert out.returncode != 0
    assert "Traceback" not in out.stderr and out.stderr.startswith("mlpl-lab: error:")
    assert len(out.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "cli-store").exists() or not any((tmp_path / "cli-store").rglob("summary.json"))
    ok = subprocess.run([sys.executable, "-m", "mlpl_lab.cli", "pack", "inspect", str(path)],
                        capture_output=True, text=True, env=env)
    assert ok.returncode == 0 and "pack smoke-test" in ok.stdout


def test_export_without_notebooks_takes_every_notebook_that_asks_for_runs(tmp_path, monkeypatch):
    """`pack export` with no --notebooks: notebook 00 trains nothing (it only draws scenes), so it
    is not asked for runs it never read (the cold cpu series' first export failed on it)."""
    from mlpl_lab import cli

    seen = {}

    def fake_export(path, profile, names, weights="needed", name=None):
        seen["names"] = list(names)
        raise pack.PackError("stop here")

    monkeypatch.setattr(pack, "export", fake_export)
    with pytest.raises(SystemExit) as exit_:
        cli.main(["pack", "export", str(tmp_path / "p.mlplpack"), "--profile", "smoke"])
    assert exit_.value.code != 0
    assert seen["names"] == ["01_assume_negative", "02_gr_loss", "03_opml", "04_cls", "05_lac",
                             "06_pu_mlc", "07_benchmark", "08_side_information"]
