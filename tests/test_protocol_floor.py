"""The protocol floor: the chapters' package holds chapters only, no chapter imports another, no file
of the package is long, every design has the one shape, and the handbook's two recipes work from
outside the package -- a method joins 07 as one catalogue entry and one recipe line, and a chapter
joins the course as one registered module.

Oracles: the package's files and syntax trees (read here, not through the registry), the specs the
new row's recipe must make written out by hand from the profile, and the one run an outside
chapter asks for, built here from its profile."""
from __future__ import annotations

import ast
import dataclasses
import json
import sys
from pathlib import Path

import pytest

from mlpl_lab.profiles import get_profile

ROOT = Path(__file__).resolve().parents[1]
PKG = ROOT / "mlpl_lab"
CHAPTERS = PKG / "chapters"
#: the longest file the package may hold (before the protocol floor: chapters/benchmark.py, 1,516)
LONGEST_FILE = 800


def test_no_file_of_the_package_is_over_800_lines():
    """Bug caught: one module growing into the house's catch-all (07's was 1,516 lines)."""
    long = {str(p.relative_to(ROOT)): n for p in PKG.rglob("*.py")
            if (n := len(p.read_text(encoding="utf-8").splitlines())) > LONGEST_FILE}
    assert not long, f"split these by what they do: {long}"


def _chapter_units():
    """``{name: [files]}`` of the chapters' package: each module, or each package with its files."""
    out = {}
    for p in sorted(CHAPTERS.iterdir()):
        if p.name.startswith("__") or p.name.startswith("."):
            continue
        if p.is_dir():
            out[p.name] = sorted(p.rglob("*.py"))
        elif p.suffix == ".py":
            out[p.stem] = [p]
    return out


def _declares_a_chapter(files) -> bool:
    for f in files:
        tree = ast.parse(f.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.Assign) and any(getattr(t, "id", None) == "CHAPTER" for t in node.targets):
                return True
    return False


def test_the_chapters_package_holds_chapters_only():
    """Bug caught: machinery (what a chapter asks, tuning, the plan, the registry, length checks,
    a user's row) sitting beside the chapters again. Oracle: every module or package directly in
    chapters/ assigns ``CHAPTER`` at its top level, read from its syntax tree; and there are the
    course's nine."""
    units = _chapter_units()
    machinery = sorted(name for name, files in units.items() if not _declares_a_chapter(files))
    assert not machinery, f"not chapters (move them to mlpl_lab/protocol/): {machinery}"
    assert len(units) == 9, sorted(units)


def test_no_chapter_imports_another_chapter():
    """Bug caught: 07 reaching into 02-05 for a row's recipe or a length rule, so a change to one
    chapter moved another's runs. Oracle: every import statement of every file under chapters/
    (functions included), resolved to the chapter it names."""
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from test_layers import imports_of, module_name, modules
    finally:
        sys.path.pop(0)
    known = modules()
    bad = []
    for mod, path in known.items():
        parts = mod.split(".")
        if parts[:2] != ["mlpl_lab", "chapters"] or len(parts) < 3:
            continue
        for target in imports_of(module_name(path), path, known):
            tparts = target.split(".")
            if tparts[:2] == ["mlpl_lab", "chapters"] and len(tparts) >= 3 and tparts[2] != parts[2]:
                bad.append(f"{mod} imports {target}")
            if tparts == ["mlpl_lab", "chapters"]:
                bad.append(f"{mod} imports the chapters' package")
    assert not bad, "\n".join(sorted(bad))


def test_the_checker_catches_a_chapter_importing_another(tmp_path):
    """The oracle above, on a fake chapter file that imports chapter 02."""
    sys.path.insert(0, str(ROOT / "tests"))
    try:
        from test_layers import imports_of
    finally:
        sys.path.pop(0)
    fake = tmp_path / "mlpl_lab" / "chapters" / "benchmark" / "views.py"
    fake.parent.mkdir(parents=True)
    fake.write_text("def f():\n    from ...chapters import gr\n")
    assert imports_of("mlpl_lab.chapters.benchmark.views", fake, {"mlpl_lab.chapters.gr"}) == {"mlpl_lab.chapters.gr"}


def test_no_view_of_07_asks_for_a_run():
    """Bug caught: a view that trains or asks the store for runs while the notebook shows it.
    Oracle: the names the views module uses, read from its syntax tree."""
    tree = ast.parse((CHAPTERS / "benchmark" / "views.py").read_text(encoding="utf-8"))
    called = {getattr(n.func, "id", getattr(n.func, "attr", None)) for n in ast.walk(tree) if isinstance(n, ast.Call)}
    imported = {a.name for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) for a in n.names}
    asks = {"specs", "stages", "cell_trials", "choices", "ensure_asked", "ensure", "ensure_grid", "spec_for",
            "store_lookup", "RunStore", "waiting", "results", "same_head_spec", "execute"} & (called | imported)
    assert not asks, f"views that ask for runs: {sorted(asks)}"


TRAINING = ("01_assume_negative", "02_gr_loss", "03_opml", "04_cls", "05_lac", "06_pu_mlc", "07_benchmark")


@pytest.mark.parametrize("stem", TRAINING)
def test_every_design_has_the_one_shape_and_the_one_rule_for_an_unknown_profile(stem):
    """Bug caught: three rules for a profile a chapter does not name (cpu's design, one seed, an
    error), seeds typed in a table, a design whose profile is a name. Oracle: a custom profile that
    is cpu renamed gets exactly cpu's design (the profile aside); every design passes
    :func:`mlpl_lab.protocol.design.shape_problems` under every profile."""
    from mlpl_lab.protocol.design import shape_problems
    from mlpl_lab.protocol.registry import training_chapter

    module = training_chapter(stem).module
    laptop = dataclasses.replace(get_profile("cpu"), name="laptop")
    for profile in ("smoke", "cpu", "gpu", "gpu_shape", laptop):
        assert shape_problems(module.design(profile)) == [], profile
    assert module.design(laptop) == dataclasses.replace(module.design("cpu"), profile=laptop)
    two = dataclasses.replace(laptop, seeds=[0, 1])  # fewer seeds than cpu's: its own, capped
    assert shape_problems(module.design(two)) == []


def test_the_one_rule_by_hand():
    """A table with the profile's row, with the row of the profile it takes, and with neither."""
    from mlpl_lab.protocol.design import preset

    table = {"cpu": "c", "gpu": "g", "smoke": "s"}
    assert preset(table, "smoke") == "s" and preset(table, "gpu_shape") == "g"
    assert preset({"cpu": "c", "gpu_shape": "gs", "gpu": "g"}, "gpu_shape") == "gs"
    assert preset(table, dataclasses.replace(get_profile("gpu"), name="mine")) == "c"
    with pytest.raises(KeyError, match="names neither"):
        preset({"gpu": "g"}, "smoke")


# --------------------------------------------------------------- a method added from outside
#: the handbook's recipe for a loss trained as one network, from outside the package
NEW_KEY, NEW_LABEL, NEW_LOSS = "floor_test_loss", "Floor test", "floor_test_loss"


@pytest.fixture
def outside_method(monkeypatch):
    """A loss, its numerics version, one catalogue entry and one recipe line, registered here."""
    import torch.nn.functional as F

    from mlpl_lab import catalogue
    from mlpl_lab.core import numerics
    from mlpl_lab.losses.registry import LOSSES, register_loss
    from mlpl_lab.methods.registry import METHODS
    from mlpl_lab.protocol import recipes

    def floor_test_loss(logits, observed, margin: float = 0.0):
        """AN with a margin: a loss any method file could hold."""
        known = (observed == 1).float()
        return F.binary_cross_entropy_with_logits(logits - margin, known)

    register_loss(NEW_LOSS)(floor_test_loss)
    monkeypatch.setitem(numerics.VERSIONS, f"method.{floor_test_loss.__module__.rsplit('.', 1)[-1]}", 1)
    catalogue.register(catalogue.Entry(NEW_KEY, NEW_LABEL, NEW_LOSS, "zoo", ("07",), colour="#123456",
                                       grid={"margin": [0.0, 0.5, 1.0]}))
    recipes.register_recipe(NEW_KEY, recipes.Recipe(params=lambda P, regime, seed: {"margin": 0.0},
                                                    note="a test's row"))
    try:
        yield
    finally:
        recipes.unregister_recipe(NEW_KEY)
        catalogue.unregister(NEW_KEY)
        METHODS.pop(NEW_LOSS, None)
        LOSSES.pop(NEW_LOSS, None)


def test_a_method_added_outside_the_package_is_planned_in_07(outside_method):
    """Bug caught: a row that needs 07's side tables (its recipe, its regimes, its grid) edited in
    the package, or the handbook's "add a method" recipe leaving a step out. Oracle: the new row's
    trials and fresh-seed runs written out by hand from the cpu profile -- its method, its recipe's
    hyperparameters under the first points of its grid, single positive, the selection seed 0 and
    the fresh seeds 1-5."""
    from mlpl_lab import catalogue
    from mlpl_lab.chapters import benchmark
    from mlpl_lab.protocol import recipes, tuning
    from mlpl_lab.protocol.plan import plan_notebook

    P = get_profile("cpu")
    assert NEW_LABEL in [r.label for r in recipes.rows()] and catalogue.LABEL.floor_test_loss == NEW_LABEL
    d = benchmark.design(P)
    assert NEW_LABEL in d.grid["single positive"] and NEW_LABEL not in d.grid["drop 50 %"]  # the block
    assert (("single positive", NEW_LABEL) in d.tuned_cells())
    plan = plan_notebook(P, "07_benchmark", {"profile": "cpu"})
    trials = [P.spec(NEW_LOSS, {"margin": m}, "single_positive", {}, seed=0) for m in (0.0, 0.5, 1.0)]
    fresh = [P.spec(NEW_LOSS, {"margin": 0.0}, "single_positive", {}, seed=s) for s in (1, 2, 3, 4, 5)]
    planned, later = {s.key for s in plan.specs}, {s.key for s in plan.later}
    assert {s.key for s in trials} <= planned  # the trials are decidable at once
    assert {s.key for s in fresh} <= later  # the fresh seeds wait on their choice (the stand-in: the default)
    assert tuning.trial_points(NEW_LABEL, tuning.trials_for(P)) == [{}, {"margin": 0.5}, {"margin": 1.0}]
    assert "a test's row" in benchmark.rows_table().loc[NEW_LABEL, "note"]


def test_a_row_without_a_recipe_line_is_its_method_with_its_fixed_hyperparameters(outside_method):
    """The default recipe: the entry's method and fixed hyperparameters at the profile's scale."""
    from mlpl_lab import catalogue
    from mlpl_lab.protocol import recipes

    P = get_profile("smoke")
    catalogue.register(catalogue.Entry("floor_plain", "Floor plain", NEW_LOSS, "zoo", ("07",), colour="#654321",
                                       params={"margin": 0.25}))
    try:
        assert recipes.spec_for(P, "Floor plain", "drop 50 %", 1) == \
            P.spec(NEW_LOSS, {"margin": 0.25}, "drop_positives", {"alpha": 0.5}, seed=1)
        assert recipes.row("Floor plain").applies("known 10 %")
    finally:
        catalogue.unregister("floor_plain")
    with pytest.raises(KeyError, match="no row 'Floor plain'"):
        recipes.row("Floor plain")


def test_a_recipes_length_reaches_the_chapter_and_07_alike(monkeypatch):
    """Bug caught: 07's OPML cells and chapter 03's OPML rows trained at different lengths (their
    runs no longer shared). Oracle: the epochs set in the OPML rows' recipe, read off both specs."""
    from mlpl_lab.chapters import opml
    from mlpl_lab.protocol import recipes
    from mlpl_lab.protocol.asked import nothing_stored

    monkeypatch.setitem(recipes.OPML_EPOCHS, "cpu", 60)
    P = get_profile("cpu")
    mine = recipes.spec_for(P, "OPML-SP", "single positive", 1)
    theirs = opml.specs(opml.design(P), nothing_stored).now[opml.PARTIAL]["OPML-SP"][1]
    assert mine == theirs and mine.train["epochs"] == 60
    assert recipes.spec_for(P, "AN", "single positive", 1).train["epochs"] == P.epochs


def test_registration_refuses_what_would_clash():
    from mlpl_lab import catalogue
    from mlpl_lab.protocol import recipes

    with pytest.raises(ValueError, match="already has an entry"):
        catalogue.register(catalogue.Entry("gr", "GR", "gr", "GR Loss", ("07",)))
    with pytest.raises(ValueError, match="package's own entries"):
        catalogue.unregister("gr")
    with pytest.raises(KeyError, match="no catalogue entry"):
        recipes.register_recipe("nope", recipes.Recipe())
    with pytest.raises(ValueError, match="regimes the lab does not have"):
        recipes.Recipe(regimes=("drop 10 %",))


# -------------------------------------------------------------- a chapter written outside
OUTSIDE = '''
"""A chapter written outside the package: one tiny run, from scratch."""
from dataclasses import dataclass

from mlpl_lab.analysis.claims import Family
from mlpl_lab.profiles import Profile, get_profile
from mlpl_lab.protocol.asked import Asked
from mlpl_lab.protocol.common import as_profile
from mlpl_lab.protocol.design import preset
from mlpl_lab.protocol.registry import Chapter

PARAMETERS = ("seed",)
DESIGNS = {"cpu": {"epochs": 1}}


@dataclass(frozen=True)
class Design:
    profile: Profile
    epochs: int
    seed: int

    @property
    def families(self):
        return {"AN runs": Family("AN runs", 1, "does AN train?")}


def tiny(profile):
    return get_profile(as_profile(profile), init="scratch", n_train=32, n_val=16, n_test=16, probes=[])


def design(profile, seed=0):
    return Design(tiny(profile), preset(DESIGNS, profile)["epochs"], seed)


def specs(d, stored):
    return Asked({"main": {"AN": [d.profile.spec("an", seed=d.seed, epochs=d.epochs)]}})


CHAPTER = Chapter("97_outside_chapter")
'''


@pytest.fixture
def outside_chapter(tmp_path, monkeypatch):
    """The module above, imported from tmp_path (not the package's path) and registered by its
    name, and a notebook file of its own with a ``parameters`` cell."""
    from mlpl_lab.protocol.registry import register_chapter, unregister_chapter

    (tmp_path / "outside_chapter.py").write_text(OUTSIDE)
    monkeypatch.syspath_prepend(str(tmp_path))
    cell = {"cell_type": "code", "execution_count": None, "id": "p", "metadata": {"tags": ["parameters"]},
            "outputs": [], "source": ["profile = \"smoke\"\n", "seed = 3\n"]}
    notebook = tmp_path / "97_outside_chapter.ipynb"
    notebook.write_text(json.dumps({"cells": [cell], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}))
    chapter = register_chapter("outside_chapter")
    try:
        yield chapter.module, notebook, chapter
    finally:
        unregister_chapter("outside_chapter")
        sys.modules.pop("outside_chapter", None)


def test_a_chapter_registered_from_outside_is_planned_and_served(outside_chapter, tmp_path):
    """Bug caught: a registry that only scans the package's folder, so a chapter of one's own is
    never planned, or is planned but its stored runs are trained again. Oracle: the one run the
    module asks for, built here from its profile with the notebook's seed (3)."""
    from mlpl_lab.protocol.asked import ensure_asked, store_lookup
    from mlpl_lab.protocol.plan import plan_series
    from mlpl_lab.protocol.registry import chapters, training_chapter
    from mlpl_lab.runs.ensure import read_only
    from mlpl_lab.runs.store import RunStore

    module, notebook, chapter = outside_chapter
    assert chapter.trains and training_chapter("97_outside_chapter").module is module
    assert "97_outside_chapter" in [c.notebook for c in chapters()]
    P = get_profile("smoke")
    want = module.tiny(P).spec("an", seed=3, epochs=1)
    plan = plan_series(P, [notebook])
    assert [s.key for s in plan.notebooks[0].specs] == [want.key] and plan.order[0].key == want.key
    store = RunStore(tmp_path / "runs")
    trained = ensure_asked(module.specs, module.design(P, seed=3), store=store)["main"]["AN"][0]
    with read_only("an outside chapter is served from the store"):
        served = ensure_asked(module.specs, module.design(P, seed=3), store=store)["main"]["AN"][0]
    assert served.spec.key == trained.spec.key == want.key
    again = plan_series(P, [notebook], serve_stored=False)
    assert store_lookup(store)(again.order[0]) is not None  # the plan's run is the stored one
