"""Chapters as data (issue 50): each chapter's pure ``specs`` asks for exactly the runs its
notebook asked for before the refactor (``tests/goldens/plan_keys.json``, made by
``tests/plan_keys.py`` from the dry-run planner), for cpu (the shipped pack as the store, so every
choice is read from stored runs), smoke (the smoke series trained here) and gpu (what is decidable
with nothing stored). A chapter module without ``specs`` yet is skipped."""
from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from plan_keys import FIXTURE, fingerprint, with_stages

from mlpl_lab.chapters.plan import CHAPTER_MODULES

ROOT = Path(__file__).resolve().parents[1]
MODULES = {"01_assume_negative": "assume_negative", "02_gr_loss": "gr", "03_opml": "opml",
           "04_cls": "cls", "05_lac": "lac", "06_pu_mlc": "pu_mlc", "07_benchmark": "benchmark"}
EXPECTED = json.loads(FIXTURE.read_text())


def chapter(stem):
    module = importlib.import_module(f"mlpl_lab.chapters.{MODULES[stem]}")
    if not (hasattr(module, "specs") and hasattr(module, "design")):
        pytest.skip(f"chapters.{MODULES[stem]} has no design/specs yet")
    return module


def design_for(module, stem, profile):
    from mlpl_lab.chapters.plan import notebook_parameters

    params = notebook_parameters(ROOT / "notebooks" / f"{stem}.ipynb")
    kwargs = {k: params[k] for k in getattr(module, "PARAMETERS", ()) if k in params}
    return module.design(profile, **kwargs)


def asked_keys(module, design, store, train: bool):
    """Every run the rounds ask for (and the stages they start from), by fingerprint."""
    from mlpl_lab.chapters.asked import ensure_asked
    from mlpl_lab.runs.ensure import read_only

    asked = []

    def recording(d, stored):
        a = module.specs(d, stored)
        asked.extend(a.flat("now"))
        return a

    if train:
        ensure_asked(recording, design, store=store)
    else:
        with read_only("the shipped pack holds every cpu run"):
            ensure_asked(recording, design, store=store)
    return set(with_stages(asked))


@pytest.fixture(scope="module")
def cpu_store(tmp_path_factory):
    from mlpl_lab.runs.shipped import import_missing
    from mlpl_lab.runs.store import RunStore

    store = RunStore(tmp_path_factory.mktemp("cpu-pack") / "runs")
    import_missing("cpu", store)
    return store


@pytest.mark.slow
@pytest.mark.parametrize("stem", list(MODULES))
def test_cpu_specs_ask_for_exactly_the_runs_the_pack_holds_for_the_notebook(stem, cpu_store):
    module = chapter(stem)
    got = asked_keys(module, design_for(module, stem, "cpu"), cpu_store, train=False)
    want = set(EXPECTED["cpu"]["notebooks"][stem])
    assert got == want, f"{stem}: {len(got - want)} runs more, {len(want - got)} fewer than before"


@pytest.mark.slow
@pytest.mark.parametrize("stem", list(MODULES))
def test_smoke_specs_ask_for_exactly_the_runs_of_before(stem, tmp_path_factory):
    from mlpl_lab.runs.store import RunStore

    module = chapter(stem)
    store = RunStore(tmp_path_factory.mktemp(f"smoke-{stem}") / "runs")
    got = asked_keys(module, design_for(module, stem, "smoke"), store, train=True)
    want = set(EXPECTED["smoke"]["notebooks"][stem])
    assert got == want, f"{stem}: {len(got - want)} runs more, {len(want - got)} fewer than before"


@pytest.mark.parametrize("stem", list(MODULES))
def test_gpu_first_round_holds_every_run_the_old_dry_run_reached(stem):
    from mlpl_lab.chapters.asked import nothing_stored, plan_rounds

    module = chapter(stem)
    rounds = plan_rounds(module.specs, design_for(module, stem, "gpu"), nothing_stored)
    first = set(with_stages(rounds[0].specs))
    reached = set(EXPECTED["gpu"]["notebooks"][stem])
    assert reached <= first, f"{stem}: {len(reached - first)} runs the dry run asked for are missing"
    everything = first | set(with_stages(s for r in rounds[1:] for s in r.specs))
    assert all(fingerprint(s) in everything for s in rounds[0].specs)


@pytest.mark.parametrize("stem", sorted(CHAPTER_MODULES))
def test_every_chapter_runs_with_one_signature_and_one_return_shape(stem):
    """Bug caught: a chapter whose ``run`` takes a profile instead of its design, drops the store
    or the engine options, or returns one family or a view object instead of every family (the
    seven return shapes issue 50 found). Oracle: the contract written out here."""
    import inspect
    import typing

    from mlpl_lab.chapters.asked import Runs

    module = importlib.import_module("mlpl_lab.chapters." + CHAPTER_MODULES[stem])
    sig = inspect.signature(module.run)
    params = list(sig.parameters.values())
    assert [p.kind for p in params] == [inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                        inspect.Parameter.POSITIONAL_OR_KEYWORD,
                                        inspect.Parameter.VAR_KEYWORD], stem
    assert params[1].name == "store" and params[1].default is None, stem
    assert typing.get_type_hints(module.run)["return"] == Runs, stem
