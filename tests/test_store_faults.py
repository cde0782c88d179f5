"""The run store cannot serve a wrong result: its key is the spec and the numerics version (guarded
by the golden records of tests/test_goldens.py), what the key does not hold is recorded and checked, and a damaged or shared store never breaks a run.

Each test names the bug it catches (issue 21, fidelity audit 2 §5)."""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import subprocess
import sys
import textwrap
import time
import warnings
from pathlib import Path

import numpy as np
import pytest
import torch

from mlpl_lab.runs import ensure, ensure as run_ensure
from mlpl_lab.runs import ensure, store
from mlpl_lab.runs.environment import FOREIGN_ENV, ForeignRunError
from mlpl_lab.runs.folders import STALE_TMP_HOURS, DamagedRunError
from mlpl_lab.runs.spec import RunSpec
from mlpl_lab.profiles import get_profile

PACKAGE = Path(store.__file__).resolve().parents[1]


from test_store import P, data_root  # noqa: F401  (fixtures: a temporary store, a tiny profile)


def fake_run(st, spec, value=1.0, extra=None):
    """Store a run without training: a one-epoch history and a small weights dict."""
    history = [{"epoch": 1, "val_mAP": value, "test_mAP": value}]
    return st.put(spec, history, 0, {}, {"networks": {"net": {"w": torch.full((3,), value)}}}, extra)


# ------------------------------------------------------------------------------ the key
def test_the_key_is_the_spec_and_its_components_versions_alone():
    """Bug caught: a key that still hashes anything else (the package version, the source, the
    versions of components the run does not use): the oracle is sha256 of the canonical spec JSON
    and the versions of the components an AN run uses, listed here by hand."""
    from mlpl_lab.core.numerics import VERSIONS

    spec = get_profile("smoke", init="scratch").spec("an", seed=1)
    text = json.dumps(spec.as_dict(), sort_keys=True, separators=(",", ":"))
    used = ("data.regimes", "data.scenes", "engine", "head.linear", "method.basic", "model.small_cnn")
    tag = "versions=" + json.dumps({c: VERSIONS[c] for c in used}, sort_keys=True, separators=(",", ":"))
    want = hashlib.sha256((text + tag).encode()).hexdigest()[:20]
    assert spec.key == want


def test_an_edit_or_a_moved_file_keeps_every_key_and_a_bump_changes_only_its_runs(tmp_path):
    """Bug caught: run keys that follow the source text (a comment re-keyed every run, so a shipped
    course pack went stale on every commit). A copy of the package with a comment added to the
    training loop, a loss and the store, and a new module, gives the same keys; a copy with LAC's
    version bumped in the file gives a new key to the LAC run only, one with the engine's to all."""
    script = ("from mlpl_lab.profiles import get_profile; P = get_profile('smoke'); "
              "print(P.spec('an').key, P.spec('lac', seed=1).key, P.pretrain_spec().key)")

    def keys(edit: str) -> list:
        root = tmp_path / edit
        shutil.copytree(PACKAGE, root / "mlpl_lab", ignore=shutil.ignore_patterns("__pycache__"))
        if edit == "comment":
            for rel in ("engine/train.py", "losses/gr.py", "runs/store.py", "data/scenes.py"):
                with open(root / "mlpl_lab" / rel, "a") as f:
                    f.write("\n# an edit that changes no numbers\n")
            (root / "mlpl_lab" / "runs" / "moved_helper.py").write_text("X = 1\n")
        if edit in ("method.lac", "engine"):
            num = root / "mlpl_lab" / "core" / "numerics.py"
            text = num.read_text()
            line = f'    "{edit}": {VERSIONS[edit]},'
            assert text.count(line) == 1
            num.write_text(text.replace(line, f'    "{edit}": {VERSIONS[edit] + 1},'))
        out = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True,
                             env=os.environ | {"PYTHONPATH": str(root)}, check=True)
        return out.stdout.split()

    from mlpl_lab.core.numerics import VERSIONS

    same, edited = keys("same"), keys("comment")
    lac, engine = keys("method.lac"), keys("engine")
    assert len(same) == 3
    assert edited == same
    assert [a == b for a, b in zip(lac, same)] == [True, False, True]
    assert not set(engine) & set(same)


def test_the_numerics_versions_on_disk_are_the_imported_ones():
    """Bug caught: ``mlpl-lab report``'s check reading a different table than the keys use."""
    from mlpl_lab.core import numerics
    from mlpl_lab.runs import components

    assert numerics.versions_on_disk() == numerics.VERSIONS
    assert components.VERSIONS is numerics.VERSIONS


def test_an_edit_to_the_scene_generator_renames_its_cache(tmp_path):
    """Bug caught: the scene cache keyed by a hand-bumped FORMAT_VERSION, so an edited generator
    (new run keys) was served stale cached images. A copy of the package with one comment added to
    glyphs.py must name its cache files differently; an identical copy the same."""
    script = ("from mlpl_lab.data import scenes as s; "
              "print(s.cache_file(s.scene_params(8, 0, 32, 'shapes'), '/c').name)")

    def cache_name(edit: bool) -> str:
        root = tmp_path / ("edited" if edit else "same")
        shutil.copytree(PACKAGE, root / "mlpl_lab", ignore=shutil.ignore_patterns("__pycache__"))
        if edit:
            with open(root / "mlpl_lab" / "data" / "glyphs.py", "a") as f:
                f.write("\n# an edit\n")
        out = subprocess.run([sys.executable, "-c", script], cwd=root, capture_output=True, text=True,
                             env=os.environ | {"PYTHONPATH": str(root)}, check=True)
        return out.stdout.strip()

    from mlpl_lab.data import scenes

    here = scenes.cache_file(scenes.scene_params(8, 0, 32, "shapes"), "/c").name
    assert cache_name(edit=False) == here
    assert cache_name(edit=True) != here


# ----------------------------------------------------------- what the key does not hold
def test_the_numeric_environment_is_recorded_and_a_foreign_run_refused(data_root, P, monkeypatch):
    """Bugs caught: a run trained on CUDA with fp16 autocast (or under another torch) served as if
    it were this machine's; the environment not recorded at all; a foreign run silently retrained
    (a GPU-less reading would overwrite a GPU-made store). World size is recorded, not refused."""
    monkeypatch.delenv("MLPL_LAB_CPU_PRECISION", raising=False)  # its default: float32 (tests/test_cpu_precision.py)
    st, spec = store.RunStore(), P.spec("an")
    fake_run(st, spec)
    env = json.loads((st.path(spec) / "summary.json").read_text())["environment"]
    here = "cuda" if torch.cuda.is_available() else "cpu"
    assert env == {"torch": torch.__version__.split("+")[0], "device": here, "amp_dtype": "off",
                   "world_size": 1, "threads": torch.get_num_threads(), "precision": "float32"}
    amp = P.spec("an", amp=True)
    fake_run(st, amp)
    bf16 = here == "cpu" or torch.cuda.is_bf16_supported(including_emulation=False)
    assert store.RunStore().get(amp).environment["amp_dtype"] == ("bfloat16" if bf16 else "float16")

    def made_elsewhere(**fields):
        path = st.path(spec) / "summary.json"
        summary = json.loads(path.read_text())
        summary["environment"] = dict(env, **fields)
        path.write_text(json.dumps(summary))

    other = "cpu" if here == "cuda" else "cuda"
    made_elsewhere(device=other, amp_dtype="float16")
    with pytest.raises(ForeignRunError, match=f"device {other} there, {here} here") as exc:
        st.get(spec)
    assert str(st.path(spec)) in str(exc.value) and "MLPL_LAB_FOREIGN_RUNS=serve" in str(exc.value)
    calls = []
    monkeypatch.setattr(run_ensure, "fit", lambda *a, **k: calls.append(a))
    with pytest.raises(ForeignRunError):  # refused before anything trains
        ensure.ensure([P.spec("an", seed=1), spec])
    assert calls == []
    monkeypatch.setenv(FOREIGN_ENV, "serve")
    with pytest.warns(RuntimeWarning, match="another environment"):
        assert st.get(spec).environment["device"] == other
    monkeypatch.setenv(FOREIGN_ENV, "retrain")
    assert st.get(spec) is None
    monkeypatch.delenv(FOREIGN_ENV)
    made_elsewhere(torch="1.0.0")
    with pytest.raises(ForeignRunError, match="torch 1.0.0 there"):
        st.get(spec)
    made_elsewhere(world_size=4)  # a torchrun run read by a notebook
    assert st.get(spec).environment["world_size"] == 4
    made_elsewhere(threads=64)  # made on a machine with other cores: served all the same
    assert st.get(spec).environment["threads"] == 64
    monkeypatch.setenv(FOREIGN_ENV, "sometimes")
    made_elsewhere(device=other)
    with pytest.raises(ValueError, match="not one of"):
        st.get(spec)


def test_a_real_dataset_whose_label_files_changed_is_retrained(data_root, P, tmp_path):
    """Bug caught: a real dataset's key holds its root's path only, so new label files under the
    same path were served the old runs. The identity is the files' content: a copy elsewhere
    with new modification times is the same data; a changed label file is not."""
    root = tmp_path / "pascal"
    root.mkdir()
    labels = np.zeros((10, 20), dtype=np.float32)
    for phase in ("train", "val"):
        np.save(root / f"formatted_{phase}_labels.npy", labels)
        np.save(root / f"formatted_{phase}_images.npy", np.array([f"{i}.jpg" for i in range(10)]))
    spec = RunSpec(method="an", data={"dataset": "voc2012", "root": str(root), "layout": "cole",
                                            "image_size": 32})
    st = store.RunStore()
    fake_run(st, spec)
    ident = json.loads((st.path(spec) / "summary.json").read_text())["data_identity"]
    expected = hashlib.sha256((root / "formatted_train_labels.npy").read_bytes()).hexdigest()
    assert ident["formatted_train_labels.npy"]["sha256"] == expected
    later = time.time() + 100
    for f in root.iterdir():
        os.utime(f, (later, later))  # copied or touched: same content
    assert st.get(spec) is not None
    labels[3, 5] = 1
    np.save(root / "formatted_train_labels.npy", labels)
    with pytest.warns(RuntimeWarning, match="formatted_train_labels.npy"):
        assert st.get(spec) is None


# ---------------------------------------------------------------- a damaged store
@pytest.mark.parametrize("damage", ["summary truncated", "history garbage", "spec missing",
                                    "weights truncated", "weights altered"])
def test_a_damaged_run_is_reported_and_retrained(data_root, P, monkeypatch, damage):
    """Bugs caught: a corrupt JSON raising a bare JSONDecodeError on every read; a truncated or
    altered weights file loaded (or crashing the notebook) instead of being retrained."""
    spec = P.spec("an", epochs=1)
    first = ensure.ensure([spec])[0]
    folder = first.path
    if damage == "summary truncated":
        text = (folder / "summary.json").read_text()
        (folder / "summary.json").write_text(text[:len(text) // 2])
    elif damage == "history garbage":
        (folder / "history.json").write_bytes(b"\x00\xffnot json")
    elif damage == "spec missing":
        (folder / "spec.json").unlink()
    elif damage == "weights truncated":
        data = (folder / "weights.pt").read_bytes()
        (folder / "weights.pt").write_bytes(data[:len(data) // 3])
    else:  # one byte flipped, same size
        data = bytearray((folder / "weights.pt").read_bytes())
        data[len(data) // 2] ^= 0xFF
        (folder / "weights.pt").write_bytes(bytes(data))
    with pytest.warns(RuntimeWarning, match=f"{folder}.*trained again"):
        assert store.RunStore().get(spec) is None
    calls = []
    real = run_ensure.fit
    monkeypatch.setattr(run_ensure, "fit", lambda *a, **k: calls.append(1) or real(*a, **k))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        again = ensure.ensure([spec])[0]
    assert calls == [1] and again.history[0]["epoch"] == 1
    assert store.RunStore().get(spec) is not None  # whole again
    again.method  # the retrained weights load


def test_weights_load_without_pickled_code_and_are_checked(data_root, P):
    """Bugs caught: weights loaded with weights_only=False (a shared store could run pickled
    code); a NumPy value in a method's state making the run unloadable; an object that cannot
    be stored accepted silently; weights altered after the run was read served."""
    st, spec = store.RunStore(), P.spec("an")
    fake_run(st, spec, extra={"labels": np.array([[1, 0]]), "rate": np.float32(0.5), "n": 3})
    run = st.get(spec)
    blob = run.weights()
    assert torch.equal(blob["extra"]["labels"], torch.tensor([[1, 0]])) and blob["extra"]["rate"] == 0.5
    with pytest.raises(TypeError, match=r"extra_state\(\)\['queue'\].*Path"):
        fake_run(st, P.spec("an", seed=1), extra={"queue": Path("x")})
    # a weights file holding a pickled object, with a matching checksum: refused, not executed
    path = run.path / "weights.pt"
    torch.save({"weights": {}, "extra": {"x": Path("x")}}, path)
    summary = json.loads((run.path / "summary.json").read_text())
    summary["weights_sha256"] = hashlib.sha256(path.read_bytes()).hexdigest()
    (run.path / "summary.json").write_text(json.dumps(summary))
    with pytest.raises(Exception, match="weights_only|Unsupported global"):
        store.RunStore().get(spec).weights()
    with pytest.raises(DamagedRunError, match="sha256"):  # the run read before the change
        run.weights()


# one method of every class whose extra_state() adds to the label matrix
EXTRA_STATE_METHODS = ["cls", "coteaching", "coteaching_plus", "jocor", "em_apl", "en", "ll_cp",
                       "opml", "role", "lac_end_to_end"]


@pytest.mark.parametrize("name", EXTRA_STATE_METHODS)
def test_every_method_state_loads_with_weights_only(data_root, P, name):
    """Bug caught: a method's extra_state holding something torch.load(weights_only=True) cannot
    read (the run then trains but never loads back)."""
    from mlpl_lab.methods import Method, build_method

    assert type(build_method(name)).extra_state is not Method.extra_state
    kw = {"model_kwargs": {"width": 4, "head": "label_query"}} if name.startswith("lac") else {}
    run = ensure.ensure([P.spec(name, epochs=1, **kw)])[0]
    blob = torch.load(run.path / "weights.pt", weights_only=True)
    assert set(blob) == {"weights", "extra"} and blob["extra"]
    run.method  # rebuilt from the stored state


# ---------------------------------------------------------------- a shared store
WRITER = textwrap.dedent("""
    import os, sys, time
    import torch
    from mlpl_lab.runs import ensure, store
    from mlpl_lab.runs.spec import RunSpec
    who, n = int(sys.argv[1]), int(sys.argv[2])
    spec = RunSpec.from_dict(__import__("json").loads(sys.argv[3]))
    st = store.RunStore()
    for i in range(n):
        value = 1000 * who + i
        os.environ[store.FRESH_ENV] = repr(time.time())  # as --fresh: replace what is there
        st.put(spec, [{"epoch": 1, "val_mAP": value, "test_mAP": value}], 0, {},
               {"networks": {"net": {"w": torch.full((4096,), float(value))}}})
    print("ok")
""")


def test_two_writers_of_one_key_both_succeed_and_readers_see_whole_runs(data_root, P, tmp_path):
    """Bugs caught: the second writer's rename failing (ENOTEMPTY) and aborting its grid, or
    deleting the first's folder under a reader; a reader seeing a folder mixed from two writes.
    Two processes write one key 15 times each, each write replacing the other's (as under
    --fresh), while this process reads it: every read is absent or one whole write."""
    spec = P.spec("an")
    procs = [subprocess.Popen([sys.executable, "-c", WRITER, str(w), "15", spec.canonical_json()],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                              env=os.environ | {"PYTHONPATH": str(PACKAGE.parent)})
             for w in (1, 2)]
    st, reads, whole = store.RunStore(), 0, 0
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a "damaged" report during the race fails the test
        while any(p.poll() is None for p in procs) or reads < 5:
            run = st.get(spec)
            reads += 1
            time.sleep(0.002)  # leave the writers some of the two cores
            if run is not None:
                whole += 1
                value = run.history[0]["test_mAP"]
                assert run.summary["test_mAP"] == value
                try:
                    w = run.weights()["weights"]["networks"]["net"]["w"]
                except DamagedRunError:  # replaced since it was read: said, not served
                    continue
                assert torch.all(w == value), "weights of one write served with another's history"
    outs = [p.communicate() for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    assert whole > 0
    final = st.get(spec)
    assert final is not None and final.history[0]["test_mAP"] in (1014, 2014)
    assert not [p.name for p in st.root.iterdir() if p.name.startswith(".")]


def test_a_second_writer_keeps_the_first_writers_run(data_root, P):
    """Bug caught: a writer deleting a whole run another process stored under the same key (the
    same spec and code: that run is this run) and replacing it under its readers."""
    st, spec = store.RunStore(), P.spec("an")
    fake_run(st, spec, value=1.0)
    fake_run(st, spec, value=2.0)
    assert st.get(spec).history[0]["test_mAP"] == 1.0


def test_clear_leaves_writes_in_progress_alone(data_root, P):
    """Bug caught: `store --clear` deleting another process's temporary folder mid-write. It
    removes finished runs, leftovers of dead processes and folders older than the limit only."""
    st, spec = store.RunStore(), P.spec("an")
    fake_run(st, spec)
    host = socket.gethostname()
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    live = st.root / f".tmp-{spec.key}.{os.getpid()}.1.{host}"
    gone = st.root / f".tmp-{spec.key}.{dead}.2.{host}"
    old = st.root / f".tmp-{spec.key}.{os.getpid()}.3.{host}"
    elsewhere = st.root / f".tmp-{spec.key}.{dead}.4.another-host.example"
    for d in (live, gone, old, elsewhere):
        d.mkdir()
    hours_ago = time.time() - (STALE_TMP_HOURS + 1) * 3600
    os.utime(old, (hours_ago, hours_ago))
    assert st.clear() == 1
    left = sorted(p.name for p in st.root.iterdir())
    assert left == sorted([live.name, elsewhere.name])


def test_a_folder_replaced_between_opening_and_reading_is_read_again_not_damaged(tmp_path, monkeypatch):
    """Bug caught (seen once as a flaky two-writers test under load): a reader that had opened a
    run folder when another writer moved it aside, deleted it and renamed its own in place found
    the old folder's files gone, saw *a* folder at the path, and returned the run as damaged
    (empty files) instead of reading the new one. The swap is made here at the exact moment:
    right after the folder's descriptor is opened, before its first file is."""
    from mlpl_lab.runs import folders

    final = tmp_path / "runs" / "k"

    def write(folder: Path, tag: str) -> None:
        folder.mkdir(parents=True)
        for name in ("summary.json", "spec.json", "history.json", "weights.pt"):
            (folder / name).write_text(tag)

    write(final, "old")
    real_open, swapped = os.open, []

    def racing_open(name, flags, *args, dir_fd=None, **kwargs):
        if dir_fd is not None and not swapped:  # the folder is open: another writer replaces it
            swapped.append(True)
            aside = tmp_path / "runs" / ".old-k"
            os.rename(final, aside)
            shutil.rmtree(aside)
            write(final, "new")
        return real_open(name, flags, *args, dir_fd=dir_fd, **kwargs)

    monkeypatch.setattr(folders.os, "open", racing_open)
    with pytest.raises(FileNotFoundError):  # the caller (RunStore.get) reads the path again
        folders._read_folder(final)
    monkeypatch.setattr(folders.os, "open", real_open)
    assert folders._read_folder(final)["summary.json"] == b"new"
