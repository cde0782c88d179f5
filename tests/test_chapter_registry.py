"""Chapters register themselves (:mod:`mlpl_lab.protocol.registry`): a chapter module's ``CHAPTER``
is all the plan, the live exercises, the serving of packs and the course pages know of it.

The proof: a chapter module written here, outside the package, put on the package's path, shows
up in the plan, the live exercises and the syllabus's list without a line changed anywhere else."""
from __future__ import annotations

import sys
from pathlib import Path

import pytest
import yaml

from mlpl_lab import chapters as package
from mlpl_lab.protocol import live, plan, registry
from mlpl_lab.profiles import get_profile

ROOT = Path(__file__).resolve().parents[1]

FAKE = '''
from dataclasses import dataclass

from mlpl_lab.protocol.asked import Asked
from mlpl_lab.protocol.common import as_profile
from mlpl_lab.protocol.registry import Chapter, Live

PARAMETERS = ("seed",)


@dataclass(frozen=True)
class Design:
    profile: object
    seed: int


def design(profile, seed=0):
    return Design(as_profile(profile), seed)


def specs(d, stored):
    return Asked({"main": {"AN": [d.profile.spec("an", seed=d.seed)]}})


def seeds(profile):
    return (3, 4)


def key_spec(profile, seed, store=None):
    return profile.spec("an", seed=seed)


CHAPTER = Chapter("98_fake_chapter", live=Live("AN", {"smoke": {"n_train": 64, "epochs": 1}}, seeds, key_spec))
'''


@pytest.fixture
def fake_chapter(tmp_path, monkeypatch):
    (tmp_path / "zz_fake_chapter.py").write_text(FAKE)
    monkeypatch.setattr(package, "__path__", [*package.__path__, str(tmp_path)])
    yield "98_fake_chapter"
    sys.modules.pop(f"{package.__name__}.zz_fake_chapter", None)


def test_a_new_chapter_module_is_planned_and_has_its_live_exercise(fake_chapter):
    """Bug caught: a hand-kept table of chapters (the plan's notebook -> module map, the live
    exercises' chapter list, key methods and sizes) that a new chapter must be added to, or a
    chapter that is silently not planned. Oracle: the runs the fake module's ``specs`` asks for,
    and its live sizes, written out above."""
    P = get_profile("smoke")
    found = registry.chapter(fake_chapter)
    assert found is not None and found.trains and found.number == "98"

    nb = plan.plan_notebook(P, fake_chapter, {"seed": 2})
    want = P.spec("an", seed=2)
    assert want.key in {s.key for s in nb.specs}
    assert {s.key for s in nb.specs} == {want.key} | {d.key for d in [want.backbone_from] if d is not None}
    series = plan.SeriesPlan(P, [nb], plan.waves(nb.specs))
    row = next(line for line in plan.describe(series).splitlines() if line.strip().startswith(fake_chapter))
    assert "no runs" not in row and row.split()[1] == str(len(nb.specs))

    assert "98" in live.chapters() and live.key_method("98") == "AN"
    assert live.shown_seeds("98", P) == (3, 4)
    spec, conv = live.live_exercise("98", P)
    assert conv.key == P.spec("an", seed=3).key
    assert (spec.data["n_train"], spec.train["epochs"]) == (64, 1) and spec.seed == 3

    from mlpl_lab.course import syllabus

    assert "98" in syllabus._live_chapters()


def test_without_its_module_the_chapter_is_gone(fake_chapter, monkeypatch):
    """The registry holds nothing of its own: off the path, the fake chapter is unknown."""
    assert registry.chapter(fake_chapter) is not None
    monkeypatch.setattr(package, "__path__", package.__path__[:-1])
    assert registry.chapter(fake_chapter) is None
    assert "98" not in live.chapters()
    assert plan.plan_notebook("smoke", fake_chapter).specs == []


def test_every_notebook_of_the_course_is_a_registered_chapter():
    """Bug caught: a chapter module without ``CHAPTER`` (planned as training nothing) or one
    declaring a notebook the course does not have. Oracle: notebooks/course.yml and the
    notebook files."""
    course = yaml.safe_load((ROOT / "notebooks" / "course.yml").read_text())
    stems = [ch["notebook"] for ch in course["chapters"]]
    assert [c.notebook for c in registry.chapters()] == stems
    assert all((ROOT / "notebooks" / f"{stem}.ipynb").exists() for stem in stems)
    assert [c.number for c in registry.chapters() if not c.trains] == ["00"]
    assert list(live.chapters()) == ["01", "02", "03", "04", "05", "06"]


def test_two_modules_declaring_one_notebook_are_refused(fake_chapter, tmp_path):
    (tmp_path / "zz_fake_chapter_twin.py").write_text(FAKE)
    try:
        with pytest.raises(ValueError, match="two chapter modules declare notebook '98_fake_chapter'"):
            registry.chapters()
    finally:
        sys.modules.pop(f"{package.__name__}.zz_fake_chapter_twin", None)
