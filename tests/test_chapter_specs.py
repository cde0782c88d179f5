"""Chapters as data (issue 50): each chapter's pure ``specs`` asks for exactly the runs its
notebook asked for before the refactor (``tests/goldens/plan_keys.json``, made by
``tests/plan_keys.py`` from the dry-run planner; cpu's entry re-read from the chapters after each
new pack), for cpu (the shipped pack as the store, so every choice is read from stored runs), smoke
(the smoke series trained here) and gpu (what is decidable with nothing stored). A chapter module
without ``specs`` yet is skipped."""
from __future__ import annotations

import importlib
import json
from pathlib import Path

import pytest

from plan_keys import FIXTURE, asked_keys, design_for, fingerprint, with_stages

from mlpl_lab.protocol.registry import chapters

ROOT = Path(__file__).resolve().parents[1]
EXPECTED = json.loads(FIXTURE.read_text())
#: the notebooks whose chapter declares runs, as the registry finds them
MODULES = {c.notebook: c.module.__name__ for c in chapters() if c.trains}


def test_the_fixture_covers_every_chapter_that_trains():
    """Bug caught: a chapter the registry no longer finds (its ``CHAPTER`` lost) would drop out of
    every test below unnoticed. Oracle: the notebooks the fixture recorded runs for."""
    assert set(MODULES) == {stem for stem, keys in EXPECTED["cpu"]["notebooks"].items() if keys}


def chapter(stem):
    return importlib.import_module(MODULES[stem])


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
    from mlpl_lab.protocol.asked import nothing_stored, plan_rounds

    module = chapter(stem)
    rounds = plan_rounds(module.specs, design_for(module, stem, "gpu"), nothing_stored)
    first = set(with_stages(rounds[0].specs))
    reached = set(EXPECTED["gpu"]["notebooks"][stem])
    assert reached <= first, f"{stem}: {len(reached - first)} runs the dry run asked for are missing"
    everything = first | set(with_stages(s for r in rounds[1:] for s in r.specs))
    assert all(fingerprint(s) in everything for s in rounds[0].specs)


@pytest.mark.parametrize("stem", sorted(MODULES))
def test_every_notebook_asks_for_its_runs_through_the_one_entry_point(stem):
    """Bug caught: a notebook (07 did) reaching its runs through a chapter's own ``run`` wrapper
    while the others call ``ensure_asked``, or a chapter keeping such a wrapper. Oracle: the
    notebook's code cells and the chapter module's top-level functions, read as text and syntax."""
    import ast

    nb = json.loads((ROOT / "notebooks" / f"{stem}.ipynb").read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    calls = [n for n in ast.walk(ast.parse(code)) if isinstance(n, ast.Call)
             and getattr(n.func, "id", getattr(n.func, "attr", None)) == "ensure_asked"]
    assert len(calls) == 1, f"{stem}: {len(calls)} calls of ensure_asked"
    asked = calls[0].args[0]
    assert getattr(asked, "attr", getattr(asked, "id", None)) == "specs", ast.unparse(asked)
    module = importlib.import_module(MODULES[stem])
    functions = {n.name for n in ast.parse(Path(module.__file__).read_text()).body if isinstance(n, ast.FunctionDef)}
    assert "run" not in functions, f"{module.__name__} still defines run()"


def test_the_fixture_text_is_json_a_few_fingerprints_to_a_line():
    """Bug caught: the fixture's writer dropping or reordering a fingerprint, or writing text that is
    not JSON. Oracle: a hand-written text for a hand-made fixture, and ``json.loads``."""
    from plan_keys import PER_LINE, fixture_text

    keys = [f"{n:012x}" for n in range(PER_LINE + 1)]
    data = {"smoke": {"complete": False, "notebooks": {"b": keys[::-1], "a": []}}}
    want = ('{\n "smoke": {\n  "complete": false,\n  "notebooks": {\n   "a": [],\n   "b": [\n    '
            + ", ".join(f'"{k}"' for k in keys[:PER_LINE]) + f',\n    "{keys[-1]}"\n   ]\n  }}\n }}\n}}\n')
    assert fixture_text(data) == want
    assert json.loads(want) == {"smoke": {"complete": False, "notebooks": {"b": keys, "a": []}}}


def test_the_fixture_is_stored_as_its_writer_writes_it():
    """Bug caught: a hand edit of the fixture (its layout), or a fingerprint of another length than
    :func:`plan_keys.fingerprint` makes. A layout guard: the writer's own correctness is the
    hand-written case above; here the oracle for the length is the constant and hex parsing."""
    from plan_keys import FINGERPRINT_HEX, fixture_text

    assert FIXTURE.read_text() == fixture_text(EXPECTED)
    keys = {k for entry in EXPECTED.values() for ks in entry["notebooks"].values() for k in ks}
    assert keys and all(len(k) == FINGERPRINT_HEX and int(k, 16) >= 0 for k in keys)
