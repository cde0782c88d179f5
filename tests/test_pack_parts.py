"""A pack of immutable parts (mlpl_lab.runs.parts): one part per designed family, written
deterministically, kept as it is while its runs are unchanged; every part verified like a pack.

The oracles are independent of the writer: file bytes and names compared across exports, the
thinned history written out by hand, hostile indexes and parts edited with json and lzma here,
and 'the store untouched' as every path and byte under it."""
from __future__ import annotations

import hashlib
import io
import json
import shutil
import lzma
import os
import tarfile
from pathlib import Path

import pytest
import torch

from mlpl_lab.profiles import get_profile
from mlpl_lab.runs import pack, parts, store
from mlpl_lab.runs.access import CHAPTER_ENV, PROFILE_ENV

P = get_profile("smoke", init="scratch")


def fake_run(st, spec, value=1.0, device="cpu", epochs=3):
    history = [{"epoch": e + 1, "loss": 0.123456789 * (e + 1), "val_mAP": value + e + 0.123456789,
                "test_mAP": value + 2 * e, "val_AP": [value, value + e]} for e in range(epochs)]
    path = st.put(spec, history, 1, {"probe": 0.5}, {"networks": {"net": {"w": torch.full((3,), value)}}})
    summary = json.loads((path / "summary.json").read_text())
    summary["environment"] = {"torch": "9.9.9", "device": device, "amp_dtype": None, "world_size": 1, "threads": 1}
    (path / "summary.json").write_text(json.dumps(summary))
    return path


def read(st, specs, notebook="02_x", weights=()):
    """Log that ``notebook`` read ``specs`` (and loaded the weights of those in ``weights``)."""
    os.environ[CHAPTER_ENV], os.environ[PROFILE_ENV] = notebook, "smoke"
    os.environ["MLPL_LAB_FOREIGN_RUNS"] = "serve"
    try:
        for s in specs:
            with pytest.warns(RuntimeWarning):
                run = st.get(s)
            if s in weights:
                run.weights()
    finally:
        for k in (CHAPTER_ENV, PROFILE_ENV, "MLPL_LAB_FOREIGN_RUNS"):
            os.environ.pop(k)


def files(folder: Path):
    """Every file under a pack folder with its bytes (the oracle of 'unchanged')."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


def snapshot(root: Path):
    if not root.exists():
        return None
    return {str(p.relative_to(root)): (p.read_bytes() if p.is_file() else None) for p in sorted(root.rglob("*"))}


@pytest.fixture
def source(tmp_path):
    st = store.RunStore(tmp_path / "source")
    an = [P.spec("an", seed=s) for s in (0, 1)]
    gr = [P.spec("gr", seed=s) for s in (0, 1)]
    for i, spec in enumerate(an + gr):
        fake_run(st, spec, value=10.0 * (i + 1))
    read(st, an + gr, weights=(an[0],))
    family_of = {s.key: ("02_x", "baseline") for s in an} | {s.key: ("02_x", "GR, tuned") for s in gr}
    return st, an, gr, family_of


def export(st, folder, family_of, name="smoke-parts"):
    return parts.export_parts(folder, "smoke", ["02_x"], family_of, store=st, name=name)


def test_one_part_per_family_and_a_second_export_changes_no_file(source, tmp_path):
    """Bugs caught: a time stamp, a commit, a temporary file name or the dict order in a part's
    bytes (re-exporting would rewrite every part); runs of two families mixed in one part."""
    st, an, gr, family_of = source
    folder = tmp_path / "cpu-course"
    index = export(st, folder, family_of)
    assert sorted((p["family"], p["n_runs"]) for p in index["parts"]) == [("GR, tuned", 2), ("baseline", 2)]
    assert {r["key"] for r in index["runs"]} == {s.key for s in an + gr}
    names = sorted(p.name for p in (folder / "parts").glob("*.mlplpart"))
    assert names[0].startswith("02-baseline-cpu-") and names[1].startswith("02-gr-tuned-cpu-")
    on_disk = json.loads((folder / "pack.json").read_text())  # the index lists parts; each part its runs
    assert on_disk["format"] == 3 and "runs" not in on_disk
    assert sorted(p.name for p in (folder / "parts").iterdir()) == sorted(
        names + [n[: -len(".mlplpart")] + ".runs.json" for n in names])
    for part in on_disk["parts"]:
        text = (folder / "parts" / (part["file"][: -len(".mlplpart")] + ".runs.json")).read_bytes()
        assert hashlib.sha256(text).hexdigest() == part["runs_sha256"]
        assert sorted(r["key"] for r in json.loads(text)) == sorted(
            s.key for s in (an if part["family"] == "baseline" else gr))
    before = files(folder)
    mtimes = {p: p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()}
    again = export(st, folder, family_of)
    assert files(folder) == before and again == index
    assert {p: p.stat().st_mtime_ns for p in folder.rglob("*") if p.is_file()} == mtimes  # not even rewritten
    other = tmp_path / "elsewhere"  # a second folder from the same runs: the same part files
    export(st, other, family_of)
    assert {k: v for k, v in files(other).items() if k.startswith("parts/")} == \
        {k: v for k, v in before.items() if k.startswith("parts/")}


def test_a_family_that_joins_adds_its_part_and_a_retrained_family_replaces_only_its_own(source, tmp_path):
    """Bugs caught: the whole pack rewritten when one family joins; a retrained run (same key,
    other bytes) left stale in its old part, or its sibling family's part rewritten too."""
    st, an, gr, family_of = source
    folder = tmp_path / "cpu-course"
    export(st, folder, family_of)
    first = files(folder)
    cls = [P.spec("hill", seed=s) for s in (0, 1)]
    for spec in cls:
        fake_run(st, spec, value=50.0)
    read(st, an + gr + cls, weights=(an[0],))
    family_of |= {s.key: ("02_x", "Hill") for s in cls}
    export(st, folder, family_of)
    second = files(folder)
    new = sorted(set(second) - set(first))  # the new part and its run list: nothing else
    assert len(new) == 2 and new[0].startswith("parts/02-hill-cpu-") and new[1] == new[0].replace(".mlplpart", ".runs.json")
    assert all(second[k] == v for k, v in first.items() if k.startswith("parts/"))
    # GR retrained: same keys, other records
    for spec in gr:
        (st.root / spec.key).rename(tmp_path / f"old-{spec.key}")
        fake_run(st, spec, value=77.0)
    read(st, an + gr + cls, weights=(an[0],))
    export(st, folder, family_of)
    third = files(folder)
    gone, added = set(second) - set(third), set(third) - set(second)
    assert [g.split("-cpu-")[0] for g in gone if g.endswith(".mlplpart")] == ["parts/02-gr-tuned"]
    assert [a.split("-cpu-")[0] for a in added if a.endswith(".mlplpart")] == ["parts/02-gr-tuned"]
    assert sum(1 for k in third if k.endswith(".mlplpart")) == 3
    assert sum(1 for k in third if k.endswith(".runs.json")) == 3  # the replaced part's run list went with it
    dest = store.RunStore(tmp_path / "dest")
    pack.import_pack(folder, dest)
    os.environ["MLPL_LAB_FOREIGN_RUNS"] = "serve"
    try:
        assert dest.get(gr[0]).best["test_mAP"] == 77.0 + 2
    finally:
        os.environ.pop("MLPL_LAB_FOREIGN_RUNS")


def test_a_part_keeps_a_run_no_notebook_reads_any_more_while_the_store_holds_it(source, tmp_path):
    """A row read at its pilot's length leaves its shorter runs unread: the part holding them is
    kept byte for byte (and the index still lists them), never rewritten without them; once such a
    run leaves the store, its part is written again without it. Bug caught: the first export of
    pack cpu-2026-12-02f rewrote 02's main part to drop one superseded run."""
    from mlpl_lab.runs.access import forget_access

    st, an, gr, family_of = source
    folder = tmp_path / "cpu-course"
    export(st, folder, family_of)
    first = files(folder)
    forget_access(st.root, "smoke", "02_x")
    read(st, an + gr[:1], weights=(an[0],))  # gr[1] no longer read
    index = export(st, folder, family_of)
    parts_of = lambda f: {k: v for k, v in f.items() if k.startswith("parts/")}  # noqa: E731
    assert parts_of(files(folder)) == parts_of(first)  # the index's notebook counts may change
    assert gr[1].key in {r["key"] for r in index["runs"]}
    shutil.rmtree(st.root / gr[1].key)
    index = export(st, folder, family_of)
    assert gr[1].key not in {r["key"] for r in index["runs"]}
    changed = {k for k in set(files(folder)) ^ set(first) if k.endswith(".mlplpart")}
    assert sorted(c.split("-cpu-")[0] for c in changed) == ["parts/02-gr-tuned", "parts/02-gr-tuned"]


def test_a_part_keeps_weights_no_notebook_loads_any_more(source, tmp_path):
    """A notebook that stops loading a run's weights (it now reads a longer twin's model) leaves
    the part that carries them byte for byte; the weights still import. Once a notebook loads
    weights a part lacks, that part is written again with them. Bug caught: pack cpu-2026-12-03a
    rewrote 01's digits-candidate part (and committed its weights again) only because one run's
    weights were no longer loaded. Oracle: file bytes across exports, the tensor stored by hand."""
    from mlpl_lab.runs.access import forget_access

    st, an, gr, family_of = source
    folder = tmp_path / "cpu-course"
    export(st, folder, family_of)
    first = files(folder)
    forget_access(st.root, "smoke", "02_x")
    read(st, an + gr)  # an[0] read, its weights no longer loaded
    export(st, folder, family_of)
    parts_of = lambda f: {k: v for k, v in f.items() if k.startswith("parts/")}  # noqa: E731
    assert parts_of(files(folder)) == parts_of(first)
    dest = store.RunStore(tmp_path / "dest")
    pack.import_pack(folder, dest)
    assert torch.equal(torch.load(dest.root / an[0].key / "weights.pt")["weights"]["networks"]["net"]["w"],
                       torch.full((3,), 10.0))
    forget_access(st.root, "smoke", "02_x")
    read(st, an + gr, weights=(an[0], gr[0]))  # gr[0]'s weights now loaded: its part lacks them
    index = export(st, folder, family_of)
    now = parts_of(files(folder))
    assert all(now[k] == v for k, v in parts_of(first).items())  # every part kept, byte for byte
    added = {k for k in set(now) - set(first) if k.endswith(".mlplpart")}
    assert len(added) == 1 and next(iter(added)).startswith("parts/02-gr-tuned-cpu-")
    listed = {r["key"]: r["part"] for r in index["runs"]}
    assert "parts/" + listed[gr[0].key] in added and "parts/" + listed[gr[1].key] in first
    assert [p.get("superseded") for p in index["parts"] if "parts/" + p["file"] in first
            and p["family"] == "GR, tuned"] == [[gr[0].key]]
    dest = store.RunStore(tmp_path / "dest2")
    pack.import_pack(folder, dest)
    assert torch.equal(torch.load(dest.root / gr[0].key / "weights.pt")["weights"]["networks"]["net"]["w"],
                       torch.full((3,), 30.0))


def test_one_run_retrained_moves_to_a_new_part_and_its_siblings_stay_committed_once(source, tmp_path):
    """One run of a family retrained (same key, other record): its old part keeps its bytes and
    lists the old copy as superseded; one new part holds that run alone; the import serves the new
    record, never the superseded copy. Bug caught: retraining one stage-1 run of 05's Table 3 would
    have rewritten its 35-run part (4 MB committed again). Oracle: file bytes across exports and the
    value written by hand."""
    st, an, gr, family_of = source
    folder = tmp_path / "cpu-course"
    export(st, folder, family_of)
    first = files(folder)
    (st.root / gr[1].key).rename(tmp_path / "old-gr1")
    fake_run(st, gr[1], value=66.0)
    read(st, an + gr, weights=(an[0],))
    index = export(st, folder, family_of)
    now = files(folder)
    assert all(now[k] == v for k, v in first.items() if k.startswith("parts/"))
    added = sorted(set(now) - set(first))
    assert len(added) == 2 and added[0].startswith("parts/02-gr-tuned-cpu-") and added[0].endswith(".mlplpart")
    assert added[1] == added[0][: -len(".mlplpart")] + ".runs.json"  # the new part and its run list, no more
    new_part = next(p for p in index["parts"] if "parts/" + p["file"] == added[0])
    assert new_part["n_runs"] == 1 and {r["key"]: r["part"] for r in index["runs"]}[gr[1].key] == new_part["file"]
    old_part = next(p for p in index["parts"] if p["family"] == "GR, tuned" and p is not new_part)
    assert old_part["superseded"] == [gr[1].key] and old_part["n_runs"] == 1
    assert "1 superseded by a later part" in parts.describe_parts(index)
    again = export(st, folder, family_of)  # nothing changed since: no file, not the index
    assert files(folder) == now and again == index
    dest = store.RunStore(tmp_path / "dest")
    pack.import_pack(folder, dest)
    os.environ["MLPL_LAB_FOREIGN_RUNS"] = "serve"
    try:
        assert dest.get(gr[1]).best["test_mAP"] == 66.0 + 2 and dest.get(gr[0]).best["test_mAP"] == 30.0 + 2
    finally:
        os.environ.pop("MLPL_LAB_FOREIGN_RUNS")
    # an index that hides the superseded copy would serve the run from two parts: refused
    edit_index(folder, lambda i: [p.pop("superseded", None) for p in i["parts"]])
    with pytest.raises(pack.PackError, match="a run is listed twice"):
        pack.import_pack(folder, store.RunStore(tmp_path / "dest3"))


def test_runs_of_one_family_on_two_device_kinds_go_to_two_parts(tmp_path):
    st = store.RunStore(tmp_path / "source")
    specs = [P.spec("an", seed=s) for s in (0, 1)]
    fake_run(st, specs[0], device="cpu")
    fake_run(st, specs[1], device="cuda")
    read(st, specs)
    index = export(st, tmp_path / "p", {s.key: ("02_x", "baseline") for s in specs})
    assert sorted((p["device"], p["n_runs"]) for p in index["parts"]) == [("cpu", 1), ("cuda", 1)]
    assert "trained on cpu (1 runs), cuda (1 runs)" in parts.describe_parts(index)


def test_a_family_larger_than_a_part_is_split(source, tmp_path, monkeypatch):
    st, an, gr, family_of = source
    monkeypatch.setattr(parts, "TARGET_PART_BYTES", 1)  # every run its own part
    index = export(st, tmp_path / "p", family_of)
    assert len(index["parts"]) == 4 and all(p["n_runs"] == 1 for p in index["parts"])


def test_the_import_serves_every_record_the_notebooks_read_and_thins_the_rest(source, tmp_path):
    """Oracle: the thinned history written out by hand from the fake run's numbers."""
    st, an, gr, family_of = source
    folder = tmp_path / "cpu-course"
    export(st, folder, family_of)
    dest = store.RunStore(tmp_path / "dest")
    counts = pack.import_pack(folder, dest)
    assert (counts["imported"], counts["parts_read"]) == (4, 2)
    got = json.loads((dest.root / an[0].key / "history.json").read_text())
    want = [{"epoch": 1, "loss": 0.123457, "val_mAP": 10.123456789, "test_mAP": 10.0},
            {"epoch": 2, "loss": 0.246914, "val_mAP": 11.123456789, "test_mAP": 12.0, "val_AP": [10.0, 11.0]},
            {"epoch": 3, "loss": 0.37037, "val_mAP": 12.123456789, "test_mAP": 14.0, "val_AP": [10.0, 12.0]}]
    assert got == {"history": want, "initial": {"probe": 0.5}}
    assert (dest.root / an[0].key / "weights.pt").exists() and not (dest.root / an[1].key / "weights.pt").exists()
    origin = json.loads((dest.root / an[0].key / "pack.json").read_text())
    assert origin["name"] == "smoke-parts" and origin["part"].startswith("02-baseline-cpu-")


def test_thinning_twice_changes_nothing(source):
    st, an, _, _ = source
    raw = (st.root / an[0].key / "history.json").read_bytes()
    summary = {"best_epoch": 1}
    once = parts.thin_history(raw, summary)
    assert parts.thin_history(once, summary) == once


def test_only_the_parts_holding_missing_runs_are_read(source, tmp_path):
    st, an, gr, family_of = source
    folder = tmp_path / "cpu-course"
    index = export(st, folder, family_of)
    gr_part = next(p for p in index["parts"] if p["family"] == "GR, tuned")
    (folder / "parts" / gr_part["file"]).write_bytes(b"damaged")  # never read below
    dest = store.RunStore(tmp_path / "dest")
    counts = pack.import_pack(folder, dest, keys=[an[1].key])
    assert (counts["imported"], counts["parts_read"]) == (2, 1)


# ------------------------------------------------------------------- hostile or damaged parts
@pytest.fixture
def shipped(source, tmp_path):
    st, an, gr, family_of = source
    folder = tmp_path / "cpu-course"
    index = export(st, folder, family_of)
    dest = store.RunStore(tmp_path / "dest")
    fake_run(dest, P.spec("an", seed=9), value=3.0)  # a student's own run: must survive every refusal
    return folder, index, dest


def refused(folder, dest, match):
    before = snapshot(dest.root)
    with pytest.raises(pack.PackError, match=match) as err:
        pack.import_pack(folder, dest)
    assert "\n" not in str(err.value)
    assert snapshot(dest.root) == before


def edit_index(folder, change):
    index = json.loads((folder / "pack.json").read_text())
    change(index)
    (folder / "pack.json").write_text(json.dumps(index))


def test_a_flipped_byte_in_a_part_is_refused_and_the_store_untouched(shipped):
    folder, index, dest = shipped
    path = folder / "parts" / index["parts"][0]["file"]
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    refused(folder, dest, "does not match its sha256")


def test_a_missing_or_truncated_part_is_refused(shipped):
    folder, index, dest = shipped
    path = folder / "parts" / index["parts"][1]["file"]
    path.write_bytes(path.read_bytes()[:100])
    refused(folder, dest, "refused before reading it")
    path.unlink()
    refused(folder, dest, "is missing")


def test_a_part_that_climbs_out_or_is_a_link_is_refused(shipped, tmp_path):
    folder, index, dest = shipped
    first = index["parts"][0]["file"]
    edit_index(folder, lambda i: [p.update(file="../../evil.mlplpart") for p in i["parts"][:1]])
    refused(folder, dest, "plain file name")
    edit_index(folder, lambda i: [p.update(file=first) for p in i["parts"][:1]])
    real = folder / "parts" / first
    (tmp_path / "outside.mlplpart").write_bytes(real.read_bytes())
    real.unlink()
    real.symlink_to(tmp_path / "outside.mlplpart")
    refused(folder, dest, "not a plain file")


def test_an_index_that_lies_about_a_part_is_refused(shipped, tmp_path):
    """A part swapped for another valid part (its size and sha256 fixed in the index): its runs
    are not those the index lists for it."""
    folder, index, dest = shipped
    a, b = index["parts"]
    edit_index(folder, lambda i: i["parts"][0].update(size=b["size"], sha256=b["sha256"]))
    (folder / "parts" / a["file"]).write_bytes((folder / "parts" / b["file"]).read_bytes())
    refused(folder, dest, "holds other runs than pack.json lists")


def test_a_run_list_edited_missing_or_lying_is_refused(shipped):
    """A part's run list edited in place (its sha256 in the index no longer matches), missing, a
    link, or edited with its sha256 fixed so that it drops a run the part holds: each refused with
    the store untouched. Oracle: the files edited here with json and hashlib."""
    folder, index, dest = shipped
    part = index["parts"][0]
    path = folder / "parts" / (part["file"][: -len(".mlplpart")] + ".runs.json")
    text = path.read_bytes()
    path.write_bytes(text.replace(b'"seconds":', b'"seconds":1', 1))
    refused(folder, dest, "does not match its sha256")
    path.unlink()
    refused(folder, dest, "is missing")
    path.symlink_to(folder / "pack.json")
    refused(folder, dest, "not a plain file")
    path.unlink()
    fewer = json.dumps(json.loads(text)[1:]).encode()  # one run the part holds left out
    path.write_bytes(fewer)
    edit_index(folder, lambda i: i["parts"][0].update(runs_sha256=hashlib.sha256(fewer).hexdigest()))
    refused(folder, dest, "holds other runs than pack.json lists")


def test_an_index_of_format_2_that_lists_its_runs_is_read_and_exported_as_format_3(source, tmp_path):
    """The packs exported before the run lists (format 2: every run in the index, no run list
    beside a part) still import, and the next export writes the run lists without rewriting any
    part. Oracle: a format 2 index built here by hand from the runs the store holds."""
    st, an, gr, family_of = source
    folder = tmp_path / "cpu-course"
    index = export(st, folder, family_of)
    old = {k: v for k, v in json.loads((folder / "pack.json").read_text()).items()}
    old["format"] = 2
    old["parts"] = [{k: v for k, v in p.items() if k != "runs_sha256"} for p in old["parts"]]
    old["runs"] = [{"key": r["key"], "part": r["part"], "seconds": r["seconds"], "components": r["components"]}
                   for r in index["runs"]]
    (folder / "pack.json").write_text(json.dumps(old))
    for f in (folder / "parts").glob("*.runs.json"):
        f.unlink()
    before = {k: v for k, v in files(folder).items() if k.endswith(".mlplpart")}
    assert parts.read_index(folder)["runs"] == old["runs"]
    dest = store.RunStore(tmp_path / "dest")
    pack.import_pack(folder, dest)
    assert sorted(p.name for p in dest.root.iterdir() if not p.name.startswith(".")) == sorted(s.key for s in an + gr)
    again = export(st, folder, family_of)
    assert json.loads((folder / "pack.json").read_text())["format"] == 3 and again["runs"] == index["runs"]
    assert {k: v for k, v in files(folder).items() if k.endswith(".mlplpart")} == before
    assert len(list((folder / "parts").glob("*.runs.json"))) == 2


def test_an_oversized_part_is_refused_before_it_is_read(shipped, monkeypatch):
    folder, index, dest = shipped
    monkeypatch.setattr(parts, "MAX_PART_BYTES", 64)
    refused(folder, dest, "at most 64")


def test_a_damaged_index_or_a_newer_format_is_refused(shipped):
    folder, index, dest = shipped
    text = (folder / "pack.json").read_text()
    (folder / "pack.json").write_text(text[:-40])
    refused(folder, dest, "pack.json cannot be read")
    (folder / "pack.json").write_text(text)
    edit_index(folder, lambda i: i.update(format=99))
    refused(folder, dest, "newer mlpl_lab")


def test_a_hostile_member_inside_a_part_is_refused(shipped):
    """A part rebuilt by hand (lzma + tarfile, not the pack writer) with a member that climbs out;
    its size and sha256 fixed in the index so the member check is the one that fires."""
    folder, index, dest = shipped
    part = index["parts"][0]
    path = folder / "parts" / part["file"]
    with lzma.open(path) as xz, tarfile.open(fileobj=xz, mode="r|") as tar:
        members = [(m, tar.extractfile(m).read()) for m in tar]
    out = path.with_suffix(".tmp")
    with lzma.open(out, "wb") as xz, tarfile.open(fileobj=xz, mode="w|") as tar:
        for m, data in members:
            info = tarfile.TarInfo(m.name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        evil = tarfile.TarInfo("../evil.txt")
        evil.size = 1
        tar.addfile(evil, io.BytesIO(b"x"))
    data = out.read_bytes()
    out.unlink()
    path.write_bytes(data)
    edit_index(folder, lambda i: i["parts"][0].update(size=len(data), sha256=hashlib.sha256(data).hexdigest()))
    refused(folder, dest, "climbs out")


def test_the_shipped_parts_are_written_as_the_writer_writes_them():
    """Every part of the shipped cpu pack, read and written again from its own manifest and
    members, gives the same bytes: a re-export of unchanged runs changes no file."""
    from mlpl_lab.runs.shipped import shipped_pack

    folder = shipped_pack("cpu")
    if folder is None or not parts.is_parts(folder):
        pytest.skip("no pack of parts shipped for cpu")
    index = parts.read_index(folder)
    sizes = [int(p["size"]) for p in index["parts"]]
    assert max(sizes) <= parts.MAX_PART_BYTES
    for part in index["parts"][:6]:
        data = (folder / "parts" / part["file"]).read_bytes()
        got = pack.read_pack(folder / "parts" / part["file"], data=data)
        assert pack.pack_bytes(got["manifest"], got["members"], "xz") == data
        assert part["file"].endswith(hashlib.sha256(data).hexdigest()[:10] + ".mlplpart")


def test_the_families_block_joins_the_index_alone_and_every_part_keeps_its_bytes(source, tmp_path):
    """Bug caught: the design's claim families written into a part (every part's bytes would change
    when a family does), or dropped by an export that does not pass them. Oracle: the files'
    bytes before and after, and the block as given."""
    st, an, gr, family_of = source
    folder = tmp_path / "cpu-course"
    export(st, folder, family_of)
    before = files(folder)
    fams = {"02_x": {"GR beats AN": {"m": 1, "members_sha": hashlib.sha256(b"gr_beats_an").hexdigest()}}}
    index = parts.export_parts(folder, "smoke", ["02_x"], family_of, store=st, name="smoke-parts", families=fams)
    after = files(folder)
    assert index["families"] == fams and json.loads(after["pack.json"])["families"] == fams
    assert {k: v for k, v in after.items() if k != "pack.json"} == {k: v for k, v in before.items() if k != "pack.json"}
    # an export that passes no families keeps the block; the same block again changes no file
    export(st, folder, family_of)
    assert files(folder) == after
    parts.export_parts(folder, "smoke", ["02_x"], family_of, store=st, name="smoke-parts", families=fams)
    assert files(folder) == after


def test_a_store_filled_from_an_earlier_pack_gets_the_weights_a_later_part_carries(source, tmp_path, monkeypatch):
    """A store that imported a run without its weights from one pack, then meets the next pack
    that moved the run to a new part with its weights (a notebook now loads them), imports that
    copy again: the shipped import replaces it, and the weights load. A run trained here with the
    same key is never replaced. Bug caught: `make report` in a checkout whose store came from pack
    cpu-2026-12-04g failed on 08's Crisp run at 171 epochs ("without its weights") after pulling
    cpu-2026-12-04h, which carries them. Oracle: the tensor stored by hand, the files on disk."""
    from mlpl_lab.runs import shipped
    from mlpl_lab.runs.access import forget_access

    st, an, gr, family_of = source
    packs = tmp_path / "packs"
    folder = packs / "smoke-course"
    export(st, folder, family_of)
    monkeypatch.setattr(shipped, "PACK_DIR", packs)
    monkeypatch.delenv(shipped.SHIPPED_ENV, raising=False)
    monkeypatch.delenv(store.FRESH_ENV, raising=False)
    dest = store.RunStore(tmp_path / "dest")
    assert shipped.import_missing("smoke", dest)["imported"] == 4
    assert not (dest.root / gr[0].key / "weights.pt").exists()  # the first pack lacks gr[0]'s weights
    assert shipped.import_missing("smoke", dest) is None
    mine = store.RunStore(tmp_path / "mine")  # a store where gr[0] was trained here
    fake_run(mine, gr[0], value=99.0)
    forget_access(st.root, "smoke", "02_x")
    read(st, an + gr, weights=(an[0], gr[0]))  # the next pack carries gr[0]'s weights in a new part
    export(st, folder, family_of, name="smoke-parts-2")
    shipped._MANIFESTS.clear()
    done = shipped.import_missing("smoke", dest)
    assert (done["imported"], done["replaced"]) == (0, 1)
    assert "lacked 0 of the 4 runs" in done["line"] and "replaced 1 copy taken from a part" in done["line"]
    assert torch.equal(torch.load(dest.root / gr[0].key / "weights.pt")["weights"]["networks"]["net"]["w"],
                       torch.full((3,), 30.0))
    assert shipped.import_missing("smoke", dest) is None  # served: nothing left to import
    shipped.import_missing("smoke", mine)
    assert torch.equal(torch.load(mine.root / gr[0].key / "weights.pt")["weights"]["networks"]["net"]["w"],
                       torch.full((3,), 99.0))  # a run trained here wins


def test_the_index_writes_one_part_per_line_and_a_run_list_one_run_per_line(tmp_path):
    """Bugs caught: the compact layout dropping or reordering an entry, a value that looks like the
    layout's placeholder, an empty list written wrongly, a run list whose bytes depend on the order
    of the runs given (its sha256 in the index would change), or a second pack.json layout in the
    tree. Oracle: ``json.loads`` of the text against the hand-built index, and the lines by hand."""
    index = {"format": 3, "name": "t", "weights": "best",
             "notebooks": {"02_gr_loss": {"runs": 2, "weights": 0}},
             "parts": [{"file": "a.mlplpart", "n_runs": 2, "runs_sha256": "ab", "superseded": []}],
             "families": {"02_gr_loss": {"runs": {"m": 1}}}}
    text = parts.index_text(index)
    assert json.loads(text) == index
    assert '{"file":"a.mlplpart","n_runs":2,"runs_sha256":"ab","superseded":[]}' in text.splitlines()
    assert json.loads(parts.index_text({**index, "parts": []}))["parts"] == []
    metas = [{"key": "k2", "seconds": 2.0, "components": {"engine": 1}, "spec": {"x": 1}},
             {"key": "k1", "seconds": 1.5, "components": {"engine": 1}}]
    want = ('[\n{"components":{"engine":1},"key":"k1","seconds":1.5},\n'
            '{"components":{"engine":1},"key":"k2","seconds":2.0}\n]\n')
    assert parts.run_list_text(metas) == parts.run_list_text(metas[::-1]) == want
    shipped = Path(__file__).resolve().parents[1] / "data" / "packs" / "cpu-course" / "pack.json"
    if shipped.exists():  # the committed index is in the writer's layout, and lists no run
        assert shipped.read_text() == parts.index_text(json.loads(shipped.read_text()))
        assert "runs" not in json.loads(shipped.read_text())
