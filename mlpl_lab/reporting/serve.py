"""What every notebook does before its first run: serve the shipped course pack, and
say what it must train before it trains.

:func:`serve_pack` is :func:`mlpl_lab.runs.shipped.import_missing` (the same function ``mlpl-lab
report`` uses): the shipped pack of the profile is imported, verified whole, when the store lacks
any run it holds; a run already here is kept. :func:`announce_training` plans the chapter from
its ``specs`` (:func:`mlpl_lab.protocol.plan.plan_notebook`, with the stored runs read and the
notebook's own parameter values), and when runs are still missing prints how many, the images
they train, the chapter's measured cold time (``notebooks/timings.json``) and how to stop and
resume; then it starts the chapter's progress line (:class:`mlpl_lab.runs.progress.ChapterProgress`).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, Mapping, Optional

NOTEBOOK_DIR = Path(__file__).resolve().parents[2] / "notebooks"


def chapter_of(chapter: Optional[str]) -> Optional[str]:
    """The notebook's stem: as given, else the one ``mlpl-lab report`` names in the environment."""
    from ..runs.access import CHAPTER_ENV

    return chapter or os.environ.get(CHAPTER_ENV) or None


def serve_pack(profile: Any, chapter: Optional[str] = None) -> Optional[Dict[str, Any]]:
    """Import the shipped pack when the store lacks runs it holds, printing the one line that
    says so. A chapter that trains nothing (00) imports nothing."""
    from ..protocol.registry import training_chapter
    from ..runs.shipped import import_missing

    chapter = chapter_of(chapter)
    if chapter is not None and training_chapter(chapter) is None:
        return None
    done = import_missing(profile)
    if done is not None:
        print(done["line"], flush=True)
    return done


def _parameters(chapter: str, namespace: Optional[Mapping[str, Any]]) -> Dict[str, Any]:
    """The notebook's parameters: the names of its ``parameters`` cell, with the values the kernel
    holds now (papermill's ``-p`` included), else the cell's own."""
    from ..protocol.plan import notebook_parameters

    path = NOTEBOOK_DIR / f"{chapter}.ipynb"
    params = notebook_parameters(path) if path.exists() else {}
    if namespace is not None:
        params.update({k: namespace[k] for k in params if k in namespace})
    return params


def _namespace() -> Optional[Mapping[str, Any]]:
    try:
        from IPython import get_ipython

        ip = get_ipython()
    except ImportError:
        return None
    return None if ip is None else ip.user_ns


#: the chapters' measured times (``mlpl-lab course sync`` writes them; course.syllabus reads them too)
TIMINGS_FILE = NOTEBOOK_DIR / "timings.json"


def measured_cold_seconds(profile: str, chapter: str) -> Optional[float]:
    """The seconds a cold ``mlpl-lab report`` of ``chapter`` took under ``profile``
    (``notebooks/timings.json``), or None where it was not measured."""
    try:
        value = json.loads(TIMINGS_FILE.read_text()).get(profile, {}).get(chapter)
    except (OSError, ValueError):
        return None
    return float(value) if value else None


def _duration(seconds: float) -> str:
    return f"{seconds / 3600:.1f} h" if seconds >= 5400 else f"{seconds / 60:.1f} min"


def announce_training(profile: Any, chapter: Optional[str] = None,
                      namespace: Optional[Mapping[str, Any]] = None) -> Optional[Dict[str, Any]]:
    """When the chapter's plan finds runs missing from the store, print what training them
    means and start the chapter's progress line; returns ``{"runs", "images", "cold_seconds",
    "left"}`` (None when nothing is missing, or the notebook is not a chapter)."""
    from ..protocol.common import as_profile
    from ..protocol.plan import images_trained, plan_notebook
    from ..protocol.registry import training_chapter
    from ..runs.access import CHAPTER_ENV
    from ..runs.progress import chapter_progress
    from ..runs.shipped import disabled, shipped_pack
    from ..runs.store import RunStore
    from ..runs.workers import looks_stored

    chapter = chapter_of(chapter)
    chapter_progress(None)
    if chapter is None or training_chapter(chapter) is None:
        return None
    P = as_profile(profile)
    params = _parameters(chapter, namespace if namespace is not None else _namespace()) | {"profile": P.name}
    saved = os.environ.pop(CHAPTER_ENV, None)  # the plan's reads stay out of the access log
    try:
        plan = plan_notebook(P, chapter, params, serve_stored=True)
    finally:
        if saved is not None:
            os.environ[CHAPTER_ENV] = saved
    store = RunStore()
    missing = [s for s in plan.specs if not looks_stored(store, s)]
    if not missing:
        return None
    images = sum(images_trained(s) for s in missing)
    cold = measured_cold_seconds(P.name, chapter)
    pack, off = shipped_pack(P), disabled()
    why = ("no course pack is shipped for this profile" if pack is None
           else f"the shipped pack {pack.name} is not imported: {off}" if off
           else f"the shipped pack {pack.name} does not hold them")
    print(f"[mlpl-lab] This notebook must train {len(missing)} of its {len(plan.specs)} runs ({images:,} "
          f"training images): the store lacks them and {why}"
          + (", and then the runs it chooses from their results" if plan.left else "") + ". "
          + (f"A cold `mlpl-lab report` of this chapter under {P.name} took {_duration(cold)} when it was "
             "measured (notebooks/timings.json). " if cold else
             f"No cold time of this chapter under {P.name} is measured (notebooks/timings.json). ")
          + "Each run is stored when it ends: stop with the kernel's Interrupt (■); Run All again resumes "
          "from the stored runs. `mlpl-lab pack import FILE`, then a kernel restart, serves a pack instead.",
          flush=True)
    chapter_progress(chapter, {s.key: images_trained(s) for s in missing}, images_of=images_trained)
    return {"runs": len(missing), "images": images, "cold_seconds": cold, "left": plan.left}
