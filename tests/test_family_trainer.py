"""Pending families trained resumably (mlpl_lab.protocol.families, ``mlpl-lab train``): a trainer
stopped mid-family and started again completes the family with no run trained twice; sittings
split a family by its priced time; an unknown family is refused before any training.

Oracles: the store's folders and bytes before and after the restart (a run trained again would
be counted by the second trainer and be missing from the first one's folders), hand-priced
families for the split, the CLI's exit code and message."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from mlpl_lab.protocol import families as fam
from mlpl_lab.profiles import get_profile
from mlpl_lab.runs.store import RunStore

ROOT = Path(__file__).resolve().parents[1]
P = get_profile("smoke", init="scratch")

TRAINER = """
import json, signal, sys
# ctrl-c as in a terminal: a process started with SIGINT ignored (pytest-xdist's workers ignore it,
# and children inherit that) would otherwise never see it, and train the whole family
signal.signal(signal.SIGINT, signal.default_int_handler)
from mlpl_lab.protocol.families import Family, train_families
from mlpl_lab.profiles import get_profile
from mlpl_lab.runs.store import RunStore
P = get_profile("smoke", init="scratch")
family = Family("99_test", "a family", [P.spec("an", seed=s) for s in range(4)])
task = None
if sys.argv[2:] == ["paced"]:  # the first trainer: a pause after each stored run (see paced_task)
    from test_family_trainer import paced_task as task
done = train_families([family], RunStore(sys.argv[1]), workers=1, task=task)
print("RESULT " + json.dumps(done["a family"]), flush=True)
"""


#: seconds a worker of the first trainer waits after storing each run: a smoke run trains in about
#: a second, so without it a loaded machine stored the whole family before the stop landed
PACE = 5.0


def paced_task(spec, root):
    """The worker's own task (the run trained and stored), then a pause: the stop lands while the
    family is incomplete however fast the runs train."""
    from mlpl_lab.runs import workers

    out = workers._train_one(spec, root)
    time.sleep(PACE)
    return out


def folders(root: Path):
    return {p.name: {f.name: f.read_bytes() for f in sorted(p.iterdir())}
            for p in sorted(root.iterdir()) if p.is_dir() and not p.name.startswith(".")} if root.exists() else {}


def start(root: Path, *extra: str) -> subprocess.Popen:
    env = dict(os.environ, MLPL_LAB_PROGRESS="0", OMP_NUM_THREADS="1",
               PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "tests")]))
    return subprocess.Popen([sys.executable, "-c", TRAINER, str(root), *extra], env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.STDOUT, text=True, start_new_session=True)


@pytest.mark.slow  # trains 4 smoke runs on a spawned worker, twice started: about a minute
@pytest.mark.parametrize("stop", ["ctrl-c", "kill"])
def test_a_stopped_trainer_started_again_completes_the_family_training_no_run_twice(tmp_path, stop):
    root = tmp_path / "runs"
    first = start(root, "paced")
    deadline = time.time() + 240
    while time.time() < deadline and len(folders(root)) < 1:
        assert first.poll() is None, first.stdout.read()
        time.sleep(0.2)
    assert folders(root), "no run was stored within 240 s"
    if stop == "ctrl-c":  # what a terminal sends: the whole process group
        os.killpg(first.pid, signal.SIGINT)
    else:  # a killed job: the parent alone, hard; its workers notice and exit
        os.kill(first.pid, signal.SIGKILL)
    first.wait(timeout=60)
    time.sleep(3)  # a worker of the killed parent exits within its 2 s watch
    kept = folders(root)
    assert 1 <= len(kept) < 4, "the stop came after the family was complete"
    second = start(root)
    out, _ = second.communicate(timeout=600)
    assert second.returncode == 0, out
    result = json.loads(out.split("RESULT ", 1)[1])
    assert result["stored_before"] == len(kept) and result["trained"] == 4 - len(kept), out
    after = folders(root)
    assert len(after) == 4
    assert all(after[k] == v for k, v in kept.items())  # the runs stored before the stop, untouched


def fake_family(seconds):
    specs = [P.spec("an", seed=s) for s in range(len(seconds))]
    return fam.Family("07_x", "data sets: printed letters", specs,
                      seconds={s.key: t for s, t in zip(specs, seconds)},
                      how={s.key: "shape" for s in specs})


def test_a_family_that_fits_a_sitting_is_one_sitting_and_a_longer_one_is_cut_in_order():
    small = fake_family([2700.0, 2700.0, 2700.0, 2700.0])  # 2 runs on each worker: 90 min
    assert [p.name for p in fam.sittings(small, workers=2)] == ["data sets: printed letters"]
    big = fake_family([3600.0] * 7)  # hour-long runs: two per 90-min sitting on 2 workers
    parts = fam.sittings(big, workers=2)
    assert [p.name for p in parts] == [f"data sets: printed letters [{i}/4]" for i in (1, 2, 3, 4)]
    assert [len(p.specs) for p in parts] == [2, 2, 2, 1]
    assert [s.key for p in parts for s in p.specs] == [s.key for s in big.specs]
    assert all(p.wall(2) <= fam.SITTING_S for p in parts)
    chosen = fam.select([big], ["data sets: printed letters [2/4]"])
    assert [c.name for c in chosen] == ["data sets: printed letters [2/4]"]
    assert [c.name for c in fam.select([big], ["data sets: printed letters"])] == [p.name for p in parts]


def test_a_family_is_priced_as_its_runs_are_handed_to_the_workers():
    """Hand-derived: runs go in order to the first free worker, so one run of an hour takes an
    hour on two workers (not 30 min), three of an hour take two hours, and 60, 30, 30 min take 60.
    Bug caught: the price as total work over the workers, which put a one-run pilot at half its
    time (08's pilot of label cardinality, priced 5 min, took 12)."""
    assert fake_family([3600.0]).wall(2) == 3600.0
    assert fake_family([3600.0] * 3).wall(2) == 7200.0
    assert fake_family([3600.0, 1800.0, 1800.0]).wall(2) == 3600.0
    assert fake_family([3600.0, 1800.0, 1800.0]).wall(1) == 7200.0


def test_a_run_is_priced_to_start_after_the_runs_it_starts_from():
    """Hand-derived: LAC's stage two waits for its stage one, which waits for the pretraining run,
    so three 10-min runs in a chain take 30 min on two workers, not 20. Bug caught: 07's
    single-positive pilot (a stage one trained again, then its stage two) priced 10 min, took 18."""
    from mlpl_lab.chapters import lac

    stage2 = lac.row_spec(get_profile("smoke"), "two-stage + queue (LAC)", 0)  # from the pretrained backbone
    chain = [stage2.init_from.backbone_from, stage2.init_from, stage2]
    family = fam.Family("05_x", "Table 3", chain, seconds={s.key: 600.0 for s in chain})
    assert family.wall(2) == 1800.0
    other = P.spec("an", seed=7)  # an independent run fills the idle worker meanwhile
    family = fam.Family("05_x", "Table 3", chain + [other], seconds={s.key: 600.0 for s in chain + [other]})
    assert family.wall(2) == 1800.0


def test_pricing_reads_the_stored_runs_of_the_same_shape(tmp_path):
    """A stored AN run of 2 s per training image prices a missing AN run by its images; a method
    no stored run shares is priced per image-pixel over every stored run."""
    from mlpl_lab.protocol.plan import images_trained

    st = RunStore(tmp_path / "runs")
    made = P.spec("an", seed=0)
    history = [{"epoch": 1, "val_mAP": 1.0, "test_mAP": 1.0, "seconds": 2.0 * images_trained(made)}]
    st.put(made, history, 0, {}, {"w": 1})
    family = fam.Family("07_x", "f", [P.spec("an", seed=1), P.spec("hill", seed=1)])
    fam.price(family, st, device="cpu")
    an, hill = family.specs
    assert family.how == {an.key: "shape", hill.key: "overall"}
    assert family.seconds[an.key] == pytest.approx(2.0 * images_trained(an))
    side = int(hill.data.get("image_size", 32))
    assert family.seconds[hill.key] == pytest.approx(2.0 / (side * side) * images_trained(hill) * side * side)


def test_runs_imported_from_a_pack_are_priced_at_this_machines_speed(tmp_path):
    """Bug caught: a store filled from a pack made on a machine 2-3 times faster priced every
    family at that machine's pace, so sittings cut to 90 min ran for over three hours here. By
    hand: imported AN and Hill runs at 1 s per training image, an AN run trained here at 3 s: this
    machine is 3 times slower, so a missing AN run is priced at 3 s per image (the run here) and a
    missing Hill run, timed only elsewhere, at 1 x 3 s."""
    from mlpl_lab.protocol.plan import images_trained
    from mlpl_lab.runs.folders import PACK_FILE

    st = RunStore(tmp_path / "runs")

    def made(method, seed, per_image, imported):
        spec = P.spec(method, seed=seed)
        st.put(spec, [{"epoch": 1, "val_mAP": 1.0, "test_mAP": 1.0,
                       "seconds": per_image * images_trained(spec)}], 0, {}, {"w": 1})
        if imported:
            (st.root / spec.key / PACK_FILE).write_text(json.dumps({"name": "elsewhere"}))

    made("an", 0, 1.0, imported=True)
    made("hill", 0, 1.0, imported=True)
    made("an", 1, 3.0, imported=False)
    family = fam.Family("07_x", "f", [P.spec("an", seed=2), P.spec("hill", seed=2)])
    fam.price(family, st, device="cpu")
    an, hill = family.specs
    assert family.how == {an.key: "shape", hill.key: "shape"}
    assert family.seconds[an.key] == pytest.approx(3.0 * images_trained(an))
    assert family.seconds[hill.key] == pytest.approx(3.0 * images_trained(hill))


def test_the_cli_refuses_an_unknown_family_before_any_training(tmp_path, monkeypatch, capsys):
    from mlpl_lab.cli import main

    monkeypatch.setenv("MLPL_LAB_DATA", str(tmp_path))
    monkeypatch.setattr(fam, "pending_families", lambda *a, **k: [fake_family([60.0])])
    monkeypatch.setattr(fam, "train_families", lambda *a, **k: pytest.fail("trained"))
    with pytest.raises(SystemExit) as exit_:
        main(["train", "no such family", "--profile", "smoke"])
    assert exit_.value.code == 1
    err = capsys.readouterr().err
    assert "no notebook declares the family 'no such family'" in err
    assert "data sets: printed letters" in err


def test_the_sittings_log_names_the_family_that_trained_each_run(tmp_path):
    """Bug caught: a family trained in one sitting split over several parts because another
    chapter's family asks for some of its runs (07's pilots are also 02's), or a sitting's part name
    ("[1/2]") kept as the family. By hand: two sittings of 'pilot: x' log k1, k2 and k3 under it; a
    later sitting of 'longer: y' retrains k3; an empty sitting logs nothing; a damaged line is skipped."""
    from mlpl_lab.protocol.families import SITTINGS_LOG, base_family, record_sitting, sitting_families
    from mlpl_lab.runs.store import RunStore

    store = RunStore(tmp_path)
    assert sitting_families(store) == {}
    record_sitting(store, "07_benchmark", "pilot: x [1/2]", ["k2", "k1"])
    record_sitting(store, "07_benchmark", "pilot: x [2/2]", ["k3"])
    record_sitting(store, "02_gr_loss", "longer: y", [])
    (tmp_path / SITTINGS_LOG).open("a").write("{not json\n")
    record_sitting(store, "02_gr_loss", "longer: y", ["k3"])
    assert sitting_families(store) == {"k1": ("07_benchmark", "pilot: x"), "k2": ("07_benchmark", "pilot: x"),
                                       "k3": ("02_gr_loss", "longer: y")}
    assert base_family("data sets: printed letters") == "data sets: printed letters"
    assert base_family("tuning trials [2/3]") == "tuning trials"


def test_a_family_a_notebook_trains_itself_is_found_only_when_named(tmp_path, monkeypatch):
    """``mlpl-lab train "class priors" --notebooks 08`` trains one of 08's own families in a sitting
    of its own: with ``now=True`` the notebook's families come after the pending ones; without it
    they are not listed (the default command trains pending families only). Oracle: the family
    names chapter 08 declares, read from its module, and the runs its smoke design asks for."""
    from mlpl_lab.chapters import side_information as ch
    from mlpl_lab.commands.arguments import notebook_paths

    monkeypatch.setenv("MLPL_LAB_DATA", str(tmp_path))
    st = RunStore(tmp_path / "runs")
    paths = notebook_paths(["08"])
    pending = {f.name for f in fam.pending_families("smoke", paths, st)}
    named = {f.name: f for f in fam.pending_families("smoke", paths, st, now=True)}
    assert ch.PRIORS not in pending
    assert {ch.BASELINES, ch.PRIORS, ch.CARDINALITY, ch.PRIOR_ERROR, ch.CARDINALITY_ERROR} <= set(named)
    d = ch.design("smoke")
    own = {s.key for runs in ch.specs(d, lambda s: None).now[ch.PRIORS].values() for s in runs}
    assert own <= {s.key for s in named[ch.PRIORS].specs}
    chosen = fam.select(list(named.values()), [ch.PRIORS])
    assert [c.name for c in chosen] == [ch.PRIORS]
