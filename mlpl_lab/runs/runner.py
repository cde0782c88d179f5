"""The old door to the run machinery, kept while the chapters' imports move (issue 50): every name
here lives in a module named for what it holds.

* :mod:`mlpl_lab.runs.ensure`: ``ensure``, ``ensure_grid``, ``execute``, ``read_only`` and a
  stored run's method (``load_method``, ``initial_method``, ``pretrained_method``);
* :mod:`mlpl_lab.runs.executors`: who trains the missing runs (here, Dask, worker processes);
* :mod:`mlpl_lab.runs.validation`: ``validate``, ``config_of``;
* :mod:`mlpl_lab.runs.splits_cache`: ``build_splits``, ``clean_val_labels``, the scene cache;
* :mod:`mlpl_lab.runs.progress`: ``Progress``, ``ChapterProgress``, ``chapter_progress``;
* :mod:`mlpl_lab.runs.dry_run`: ``planning``, ``PlannedRun``, ``NeedsResults``.

Names are read here, never patched: setting one on this module would leave the module that uses
it unchanged, so it raises, naming the module to patch (e.g. ``mlpl_lab.runs.ensure.fit``).
"""
from __future__ import annotations

import sys
import types

from .access import CHAPTER_ENV  # noqa: F401
from .dry_run import NeedsResults, PlannedRun, _DeferredSplits, _DeferredVal, planning  # noqa: F401
from .ensure import (_READ_ONLY, ensure, ensure_grid, execute, initial_method, load_method,  # noqa: F401
                     pretrained_method, read_only)
from .progress import (_CHAPTER, PROGRESS_FILE_ENV, ChapterProgress, Progress, _fmt_seconds,  # noqa: F401
                       chapter_progress, current_chapter)
from .spec import RunSpec  # noqa: F401
from .splits_cache import (_SCENE_SETS, _SPLITS_CACHE, SCENE_CACHE_ENV, SCENE_CACHE_GIB,  # noqa: F401
                           _build_splits, _image_bytes, _scene_key, _scene_sets, _SceneSetCache,
                           build_splits, clean_val_labels, clear_caches)
from .store import RunStore, StoredRun  # noqa: F401
from .validation import config_of, validate  # noqa: F401


class _ReExports(types.ModuleType):
    def __setattr__(self, name, value):
        home = getattr(globals().get(name), "__module__", None) or "the module that holds it"
        raise AttributeError(f"mlpl_lab.runs.runner only re-exports {name!r}: patch it where it is "
                             f"used ({home}, or mlpl_lab.runs.ensure / splits_cache / progress)")

    def __delattr__(self, name):
        self.__setattr__(name, None)


sys.modules[__name__].__class__ = _ReExports
