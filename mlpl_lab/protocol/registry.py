"""The chapters, found where they are declared: each chapter module says what it is in one
``CHAPTER = Chapter(...)`` and nothing else in the lab lists the chapters.

A :class:`Chapter` names its notebook (the stem, e.g. ``"02_gr_loss"``) and, where the chapter
has one, its live exercise (:class:`Live`: the key method, the live run's sizes per profile, the
seeds the chapter shows that method on and the chapter's own spec of it). Whether it trains is
read off the module: a chapter with ``design`` and ``specs`` declares its runs as data
(:mod:`mlpl_lab.protocol.asked`), one without trains nothing (00).

:func:`chapters` imports every module of the chapters' package (:data:`CHAPTERS_PACKAGE`, found by
name: the chapters sit on the layer above this one; its ``__path__``, so a module placed on it
counts too), adds the modules registered from outside the package (:func:`register_chapter`: a
researcher's own chapter, a test's), and keeps those with a ``CHAPTER``: the plan (:mod:`.plan`),
the live exercises (:mod:`.live`), the serving of packs (:mod:`mlpl_lab.reporting.serve`) and the
course pages read the chapters from here. Adding a chapter touches its module, its notebook and
``notebooks/course.yml`` only (or, outside the package, one :func:`register_chapter` call).
"""
from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass, field
from types import ModuleType
from typing import Any, Callable, Dict, List, Optional, Sequence

#: ``seeds(profile)``: the seeds a chapter shows its key method's row on
Seeds = Callable[[Any], Sequence[int]]
#: ``spec(profile, seed, store)``: the chapter's own run of its key method on ``seed`` (``store``:
#: where choices made on results are read, the default store when None)
KeySpec = Callable[[Any, int, Any], Any]


@dataclass(frozen=True)
class Live:
    """A chapter's live exercise (:mod:`mlpl_lab.protocol.live`): the method it trains (display
    name), the live run's training images and epochs per profile (``{"n_train", "epochs"}``; a
    two-stage method gives ``epochs`` per stage), the seeds the chapter shows that method on and
    the chapter's own spec of it on a seed."""

    key_method: str
    sizes: Dict[str, Dict[str, Any]]
    seeds: Seeds
    spec: KeySpec


@dataclass(frozen=True)
class Chapter:
    """One chapter: its notebook's stem and its live exercise (None: it has none)."""

    notebook: str
    live: Optional[Live] = None
    #: the module that declares it (set by :func:`chapters`)
    module: Optional[ModuleType] = field(default=None, compare=False, repr=False)

    @property
    def number(self) -> str:
        """The two digits the notebook's stem starts with (``"02"``): how a live exercise is named."""
        return self.notebook[:2]

    @property
    def trains(self) -> bool:
        """Whether the chapter declares runs (its module has ``design`` and ``specs``)."""
        return self.module is not None and hasattr(self.module, "design") and hasattr(self.module, "specs")


#: the package whose modules are the course's chapters
CHAPTERS_PACKAGE = "mlpl_lab.chapters"
#: chapter modules registered from outside the package (:func:`register_chapter`), by module name
_REGISTERED: Dict[str, ModuleType] = {}


def register_chapter(module: ModuleType | str) -> Chapter:
    """Make ``module`` (a module, or the importable name of one) a chapter of the course wherever
    it lives: the plan, the live exercises and the serving of packs then find it like the
    package's own. It must declare ``CHAPTER = Chapter(...)`` (and ``design`` and ``specs`` to
    train anything); registering it again changes nothing, and a notebook two modules declare is
    refused by :func:`chapters`. Returns its chapter."""
    if isinstance(module, str):
        module = importlib.import_module(module)
    declared = getattr(module, "CHAPTER", None)
    if not isinstance(declared, Chapter):
        raise ValueError(f"{module.__name__} declares no CHAPTER = Chapter(...): nothing to register")
    _REGISTERED[module.__name__] = module
    return Chapter(declared.notebook, declared.live, module)


def unregister_chapter(module: ModuleType | str) -> None:
    """Undo :func:`register_chapter` (a module, or its name; unknown: nothing happens)."""
    _REGISTERED.pop(module if isinstance(module, str) else module.__name__, None)


def _modules() -> List[ModuleType]:
    """The chapters' package's modules (its ``__path__``), then the registered ones."""
    package = importlib.import_module(CHAPTERS_PACKAGE)
    out = [importlib.import_module(f"{CHAPTERS_PACKAGE}.{info.name}")
           for info in pkgutil.iter_modules(list(package.__path__))]
    return out + [m for name, m in _REGISTERED.items() if name not in {x.__name__ for x in out}]


def chapters() -> List[Chapter]:
    """Every chapter: declared in the chapters' package or registered from outside it
    (:func:`register_chapter`), in the order of their notebooks' stems."""
    found: Dict[str, Chapter] = {}
    for module in _modules():
        declared = getattr(module, "CHAPTER", None)
        if not isinstance(declared, Chapter):
            continue
        if declared.notebook in found:
            raise ValueError(f"two chapter modules declare notebook {declared.notebook!r}: "
                             f"{found[declared.notebook].module.__name__} and {module.__name__}")
        found[declared.notebook] = Chapter(declared.notebook, declared.live, module)
    return [found[stem] for stem in sorted(found)]


def chapter(stem: str) -> Optional[Chapter]:
    """The chapter of notebook ``stem``, or None where no chapter declares it."""
    return next((c for c in chapters() if c.notebook == stem), None)


def training_chapter(stem: str) -> Optional[Chapter]:
    """The chapter of notebook ``stem`` when it declares runs (:attr:`Chapter.trains`), else None."""
    found = chapter(stem)
    return found if found is not None and found.trains else None


def live_chapters() -> Dict[str, Chapter]:
    """``{number: chapter}`` of the chapters with a live exercise, in order."""
    return {c.number: c for c in chapters() if c.live is not None}
