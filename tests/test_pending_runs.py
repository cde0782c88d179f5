"""Pending runs (mlpl_lab.protocol.asked): designed by a chapter, trained only by the cold series or
on opt-in, read when stored, counted apart by a plan; and 07's data sets and controls as such."""
from types import SimpleNamespace

import pytest

from mlpl_lab.protocol import asked as A


def spec(key):
    return SimpleNamespace(key=key)


def fake_specs(design, stored):
    return A.Asked(now={"main": {"AN": [spec("n1"), spec("n2")]}},
                   pending={"families": {"AN · f1": [spec("p1"), spec("p2")], "AN · f2": [spec("p3")]}})


@pytest.fixture
def fake_store(monkeypatch):
    """A store holding n1, n2 and p1, p3 (p2 missing); ensure_grid records what it is asked to train."""
    held = {k: SimpleNamespace(key=k) for k in ("n1", "n2", "p1", "p3")}
    asked_to_train = []

    def ensure_grid(grid, store=None, label=None, **kw):
        out = {}
        for (fam, lab), ss in grid.items():
            asked_to_train.extend(s.key for s in ss if s.key not in held)
            out[(fam, lab)] = [held.get(s.key) or SimpleNamespace(key=s.key) for s in ss]
        return out

    monkeypatch.setattr(A, "ensure_grid", ensure_grid)
    monkeypatch.setattr(A, "store_lookup", lambda store=None: (lambda s: held.get(s.key)))
    return asked_to_train


def test_pending_runs_are_not_trained_and_only_complete_labels_are_read(fake_store, monkeypatch):
    """Bug caught: a pack-served notebook training the pending runs (it must train 0), or serving a
    label with part of its seeds missing."""
    monkeypatch.delenv(A.PENDING_ENV, raising=False)
    out = A.ensure_asked(fake_specs, None, store=object())
    assert fake_store == []  # nothing trained
    assert set(out["main"]) == {"AN"}
    assert set(out["families"]) == {"AN · f2"}  # f1 lacks p2
    assert A.pending_missing(fake_specs(None, None), lambda s: None if s.key == "p2" else s) == {"families": {"AN · f1": 1}}


def test_opting_in_trains_the_pending_runs(fake_store, monkeypatch):
    monkeypatch.setenv(A.PENDING_ENV, "1")
    out = A.ensure_asked(fake_specs, None, store=object())
    assert fake_store == ["p2"]
    assert set(out["families"]) == {"AN · f1", "AN · f2"}


def test_a_plan_counts_pending_runs_apart(monkeypatch):
    monkeypatch.delenv(A.PENDING_ENV, raising=False)
    rounds = A.plan_rounds(fake_specs, None)
    assert [r.pending for r in rounds] == [False, True]
    assert [s.key for s in rounds[1].specs] == ["p1", "p2", "p3"]
    monkeypatch.setenv(A.PENDING_ENV, "1")
    rounds = A.plan_rounds(fake_specs, None)
    assert len(rounds) == 1 and {s.key for s in rounds[0].specs} == {"n1", "n2", "p1", "p2", "p3"}


def test_a_pending_family_named_like_a_family_of_now_is_an_error(fake_store):
    def clash(design, stored):
        return A.Asked(now={"main": {"AN": [spec("n1")]}}, pending={"main": {"x": [spec("p1")]}})

    with pytest.raises(ValueError, match="own family"):
        A.ensure_asked(clash, None, store=object())


def test_07_declares_five_independent_data_sets_as_pending_runs_of_eight_ranked_methods(monkeypatch):
    """Oracle: the issue's floor (≥ 5 data sets, ≥ 8 ranked methods, ≥ 3 seeds), each data set with
    its own vocabulary, structure seed and seeds (no seed shared: read from the specs themselves),
    and the measurement record's own numbers (oracle minus AN test mAP ≥ 10 on each)."""
    import json

    from mlpl_lab.chapters import benchmark as b
    from mlpl_lab.protocol.datasets import CPU_RECORD

    monkeypatch.delenv(A.PENDING_ENV, raising=False)
    d = b.design("cpu")
    assert len(d.scenes) >= 5 and d.scenes[0] == b.OWN_DATA_SET
    ranked = [r for r in d.family_rows if r not in b.REFERENCE_ROWS]
    assert len(ranked) >= 8 and len(d.family_seeds) >= 3
    asked = b.specs(d, A.nothing_stored)
    cell_seeds = {s.seed for rs in asked.later.get(b.FAMILY_REGIME, {}).values() for s in rs}
    seeds, vocabularies, structures = {b.OWN_DATA_SET: set(d.family_seeds)}, set(), set()
    for family in d.scenes[1:]:
        for row in ranked:
            # each data set is its own pending family (trained in one sitting, alone)
            ss = asked.pending[f"data sets: {family}"][f"{row} · {family}"]
            assert len(ss) == len(d.family_seeds) and all(s.regime == "single_positive" for s in ss)
            # the own data set's hyperparameters (no tuning again)
            cell = asked.later.get(b.FAMILY_REGIME, {}).get(row) or asked.now[b.FAMILY_REGIME][row]
            assert ss[0].method_params == cell[0].method_params
            seeds.setdefault(family, set()).update(s.seed for s in ss)
            vocabularies.add(ss[0].data["glyphs"])
            structures.add(ss[0].data["structure_seed"])
    # no seed shared between two data sets, nor with the cells; a vocabulary and a structure each
    assert sum(len(v) for v in seeds.values()) == len(set().union(*seeds.values()))
    assert not (set().union(*(seeds[f] for f in d.scenes[1:])) & cell_seeds)
    assert len(vocabularies) == len(structures) == len(d.scenes) - 1 and "shapes" not in vocabularies
    # pending runs never enter the notebook's own runs
    now_keys = {s.key for s in asked.flat("now")} | {s.key for s in asked.flat("later")}
    assert not now_keys & {s.key for s in asked.flat("pending")}
    # every data set's gap in the measurement's record, from its runs themselves
    runs = json.loads(CPU_RECORD.read_text())["runs"]
    for family in d.scenes:
        full = [r["test_mAP"] for r in runs[f"{family} · full labels"]]
        an = [r["test_mAP"] for r in runs[f"{family} · AN"]]
        assert sum(full) / len(full) - sum(an) / len(an) >= 10.0, family


def test_07_ranks_over_families_once_their_runs_are_stored_and_waits_before():
    """Oracle: a hand-made set of five families where the eight methods keep one order everywhere
    (mean ranks 1..8 by hand, χ²_F = 12·5/(8·9)·(Σ r² − 8·81/4) = 35, Iman–Davenport's F infinite);
    with one family's runs missing the test waits and says for how many runs."""
    from mlpl_lab.chapters import benchmark as b

    d = b.design("cpu")
    ranked = [r for r in d.family_rows if r not in b.REFERENCE_ROWS]

    def run(value, seed):
        return SimpleNamespace(spec=SimpleNamespace(seed=seed), best={"test_mAP": value}, converged=True)

    fams = {}
    for f in d.scenes:
        fams[f] = {b.ORACLE: [run(95.0, d.family_seeds[0])]}
        for i, row in enumerate(ranked):  # AN first in the block: the worst, so every gap ≥ 10
            fams[f][row] = [run(60.0 + 3 * i if row != b.AN else 50.0, s) for s in d.family_seeds]
    runs = SimpleNamespace(design=d, families=fams, waiting={})
    t = b.family_ranks(runs)
    by_hand = {row: float(len(ranked) - i) for i, row in enumerate(ranked)}
    by_hand[b.AN] = float(len(ranked))
    assert t["mean_ranks"] == pytest.approx(by_hand)
    k, n = len(ranked), len(d.scenes)
    assert t["friedman_chi2"] == pytest.approx(12 * n / (k * (k + 1)) * (sum(r * r for r in range(1, k + 1)) - k * (k + 1) ** 2 / 4))
    assert t["p"] == 0.0 and t["p_permutation"] < 0.001
    # the record keeps a small p's significant digits (rounded to 4 decimals it would read 0)
    rec = b.family_record({"p": 3.4e-12, "p_permutation": 1 / 100_001, "F": 34.88889, "mean_ranks": {}})
    assert rec["p"] == 3.4e-12 and rec["p_permutation"] == 1e-05 and rec["F"] == 34.8889
    # one data set's runs missing: no test, and the reason names what it waits for
    last, first = d.scenes[-1], d.scenes[1]
    del fams[last]["GR"]
    runs.waiting = {b.FAMILIES: {f"GR · {last}": 3}}
    t = b.family_ranks(runs)
    assert t["p"] is None and "waits for 3 runs" in t["reason"]
    # the table the notebook records (family_mAP): the hand-made means, blank where nothing is stored
    table = b.family_table(runs)
    assert table[b.ORACLE] == {f: 95.0 for f in d.scenes} and table[b.AN] == {f: 50.0 for f in d.scenes}
    assert table["GR"][last] is None and table["GR"][first] == 60.0 + 3 * ranked.index("GR")


def test_a_named_pending_family_is_trained_alone(fake_store, monkeypatch):
    """Bug caught: naming one pending family training every one (or none), or the plan counting
    the named family's runs as pending. ``fake_specs`` has one pending family, ``families``."""
    monkeypatch.setenv(A.PENDING_ENV, "families")
    out = A.ensure_asked(fake_specs, None, store=object())
    assert fake_store == ["p2"] and set(out["families"]) == {"AN · f1", "AN · f2"}
    rounds = A.plan_rounds(fake_specs, None)
    assert len(rounds) == 1 and {s.key for s in rounds[0].specs} == {"n1", "n2", "p1", "p2", "p3"}
    assert rounds[0].pending_families == ("families",)
    # another family named: this one is not trained, stays pending and is counted as missing
    monkeypatch.setenv(A.PENDING_ENV, "length checks")
    assert [r.pending for r in A.plan_rounds(fake_specs, None)] == [False, True]
    assert A.pending_missing(fake_specs(None, None), lambda s: None) != {}
    assert A.pending_choice() == frozenset({"length checks"}) and not A.train_pending()
    # names hold commas ("end-to-end, trained longer"): several are separated by ';'
    monkeypatch.setenv(A.PENDING_ENV, "end-to-end, trained longer; families")
    assert A.pending_choice() == frozenset({"end-to-end, trained longer", "families"})
    assert A.train_pending("families") and not A.train_pending("end-to-end")
    for off in ("", "0", "no"):
        monkeypatch.setenv(A.PENDING_ENV, off)
        assert A.pending_choice() == frozenset() and not A.train_pending("families")
    monkeypatch.setenv(A.PENDING_ENV, "1")
    assert A.train_pending() and A.train_pending("anything")


def test_report_refuses_a_pending_family_no_notebook_declares(monkeypatch, tmp_path, capsys):
    """Bug caught: a typo in MLPL_LAB_TRAIN_PENDING training nothing and saying nothing. The
    refusal comes before any work (exit 2) and names 07's real pending families."""
    from mlpl_lab.cli import main

    monkeypatch.setenv(A.PENDING_ENV, "data set: printed letters")
    with pytest.raises(SystemExit) as exc:
        main(["report", "--profile", "cpu", "--notebooks", "07", "--out", str(tmp_path / "r")])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "'data set: printed letters'" in err and "'data sets: printed letters'" in err
    assert not (tmp_path / "r").exists()


def test_07s_pending_runs_come_in_parts_a_sitting_can_train(monkeypatch):
    """Each data set and each schedule-bound row's length check is its own pending family (so
    ``MLPL_LAB_TRAIN_PENDING`` can name one), and the parts together are every pending run: the
    same keys as the whole groups. Oracle: the design's own lists, counted by hand."""
    from mlpl_lab.chapters import benchmark as b

    monkeypatch.delenv(A.PENDING_ENV, raising=False)
    d = b.design("cpu")
    asked = b.specs(d, A.nothing_stored)
    scene = sorted(n for n in asked.pending if n.startswith("data sets: "))
    assert scene == sorted(f"data sets: {f}" for f in d.scenes if f != b.OWN_DATA_SET)
    ranked_rows = len(d.family_rows) - 1  # the oracle runs one seed per data set
    for name in scene:
        assert sum(len(ss) for ss in asked.pending[name].values()) == ranked_rows * len(d.family_seeds) + 1
    checks = [n for n in asked.pending if n.startswith("length check of schedule-bound rows: ")]
    assert checks and all(lab.split(" · ")[0] in (n.split(": ", 1)[1], "AN for " + n.split(": ", 1)[1])
                          for n in checks for lab in asked.pending[n])
    assert set(asked.pending) == set(scene) | set(checks)
    # the merged view the chapter reads holds every label once
    merged = b.merged(asked.pending, b.FAMILIES)
    assert len(merged) == sum(len(asked.pending[n]) for n in scene)


def test_the_data_sets_caption_reads_their_independence_from_the_record(tmp_path):
    """Oracle: a hand-made record of two pairs (largest median 0.03, one shared seed)."""
    import json

    from mlpl_lab.chapters.benchmark.views import independence_sentence

    rec = tmp_path / "r.json"
    rec.write_text(json.dumps({"independence": {
        "a | b": {"median_pixel_correlation": 0.01, "seeds": [], "structure_seeds": []},
        "a | c": {"median_pixel_correlation": 0.03, "seeds": [7], "structure_seeds": []}}}))
    assert independence_sentence(rec) == ("over the 2 pairs the lab measured, the median same-index pixel "
                                          "correlation is at most 0.0300 and 1 seeds are shared")
    assert independence_sentence(tmp_path / "absent.json") == "their independence not measured here"
