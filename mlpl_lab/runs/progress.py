"""What a notebook or ``mlpl-lab report`` shows while runs train: :class:`Progress` appends a line
per epoch and per run to the file ``mlpl-lab report`` tails (:data:`PROGRESS_FILE_ENV`: which
notebook, which run, which epoch, the time left), and :class:`ChapterProgress` keeps one line for a
notebook's whole chapter (``run k of N``, updated in place in a notebook).
"""
from __future__ import annotations

import os
import time
from typing import Any, Dict, List

from .access import CHAPTER_ENV
from .spec import RunSpec

#: env var naming a file the runner appends progress lines to (set by ``mlpl-lab report``)
PROGRESS_FILE_ENV = "MLPL_LAB_PROGRESS_FILE"


class Progress:
    """Where the runner reports: a file ``mlpl-lab report`` tails, or the notebook."""

    def __init__(self, total: int, label: str | None = None):
        self.total = total
        self.label = label or os.environ.get(CHAPTER_ENV, "")
        self.path = os.environ.get(PROGRESS_FILE_ENV)
        self.done = 0
        self.epoch_seconds: List[float] = []
        self.t0 = time.perf_counter()

    def _eta(self, epochs_left_here: int, runs_left: int, epochs_per_run: int) -> float | None:
        if not self.epoch_seconds:
            return None
        per_epoch = sum(self.epoch_seconds[-16:]) / len(self.epoch_seconds[-16:])
        return per_epoch * (epochs_left_here + runs_left * epochs_per_run)

    def emit(self, text: str) -> None:
        if self.path:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(text + "\n")

    def epoch(self, i: int, spec: RunSpec, row: Dict[str, Any], epochs: int, runs_left: int) -> None:
        self.epoch_seconds.append(float(row.get("seconds", 0.0)))
        eta = self._eta(epochs - int(row["epoch"]), runs_left, epochs)
        eta_s = "?" if eta is None else _fmt_seconds(eta)
        self.emit(f"[{self.label}] run {i}/{self.total} {spec.describe()}: epoch {row['epoch']}/{epochs}"
                  f" val mAP {row['val_mAP']:.1f} · about {eta_s} left")

    def note(self, text: str) -> None:
        self.emit(f"[{self.label}] {text}")


def _fmt_seconds(s: float) -> str:
    s = max(0.0, s)
    return f"{s / 60:.1f} min" if s >= 90 else f"{s:.0f} s"


class ChapterProgress:
    """One progress line for a notebook's whole chapter: ``run k of N``, the run being
    trained, its epoch and the time left for every run the chapter still has to train.

    :func:`mlpl_lab.reporting.report.setup_notebook` starts it (:func:`chapter_progress`) with the
    runs the chapter's plan found missing (``work``: ``{key: images trained}``); the sequential
    executor (:mod:`mlpl_lab.runs.executors`) advances it. The time left is the images still to train times the seconds per image measured
    so far (shown once the chapter has trained for :data:`MEASURED_AFTER_S`; epochs count as they
    end). In a notebook the line is one output, updated in place (one per cell that trains);
    elsewhere a line is printed when a run starts."""

    MEASURED_AFTER_S = 20.0

    def __init__(self, label: str, work: Dict[str, float], images_of=None):
        self.label, self.images_of = label, images_of
        self.work = {k: float(v) for k, v in work.items()}
        self.done: List[str] = []
        self.done_seconds = 0.0
        self.stack: List[Any] = []  # [spec, start time, fraction of its epochs done]
        self._handle, self._cell = None, None

    @property
    def total(self) -> int:
        return len(self.work)

    def seconds_left(self) -> float | None:
        """Images still to train × seconds per image measured here; None before the chapter has
        trained for :data:`MEASURED_AFTER_S` (or finished an epoch)."""
        current = {e[0].key: e[2] for e in self.stack}
        left = sum(w * (1.0 - current.get(k, 0.0)) for k, w in self.work.items() if k not in self.done)
        done = sum(self.work[k] for k in self.done) + sum(self.work[k] * f for k, f in current.items())
        elapsed = self.done_seconds + (time.perf_counter() - self.stack[0][1] if self.stack else 0.0)
        if done <= 0 or elapsed < self.MEASURED_AFTER_S:
            return None
        return elapsed / done * left

    def line(self) -> str:
        if not self.stack:
            return f"[{self.label}] {len(self.done)} of {self.total} runs trained"
        spec, _, frac = self.stack[-1]
        left = self.seconds_left()
        k = min(self.total, len(self.done) + 1)
        return (f"[{self.label}] run {k} of {self.total}: {spec.describe()} · {frac * 100:.0f} % of its epochs"
                + (" · time left: measuring" if left is None else f" · about {_fmt_seconds(left)} left for the chapter"))

    def begin(self, spec: RunSpec) -> None:
        if spec.key not in self.work:  # a run the plan could not foresee (chosen from results)
            self.work[spec.key] = float(self.images_of(spec) if self.images_of is not None else
                                        int(spec.train.get("epochs", 1)) * int(spec.data.get("n_train", 0) or 0))
        self.stack.append([spec, time.perf_counter(), 0.0])
        self.show()

    def epoch(self, spec: RunSpec, row: Dict[str, Any], epochs: int) -> None:
        if self.stack and self.stack[-1][0].key == spec.key:
            self.stack[-1][2] = min(1.0, int(row.get("epoch", 0)) / max(1, epochs))
        self.show(new_line=False)

    def end(self, spec: RunSpec, finished: bool = True) -> None:
        """The run ended: stored (``finished``), or stopped (an interrupt, an error)."""
        if self.stack and self.stack[-1][0].key == spec.key:
            _, t0, _ = self.stack.pop()
            if not self.stack:
                self.done_seconds += time.perf_counter() - t0
        if finished and spec.key not in self.done:
            self.done.append(spec.key)
        self.show(new_line=False)

    def show(self, new_line: bool = True) -> None:
        text = self.line()
        try:
            from IPython import get_ipython

            ip = get_ipython()
        except ImportError:
            ip = None
        if ip is None or not hasattr(ip, "kernel"):
            if new_line:
                print(text, flush=True)
            return
        from IPython.display import display

        cell = getattr(ip, "execution_count", None)
        if self._handle is None or cell != self._cell:
            self._handle, self._cell = display({"text/plain": text}, raw=True, display_id=True), cell
        else:
            self._handle.update({"text/plain": text}, raw=True)


_CHAPTER: List[ChapterProgress] = []


def chapter_progress(label: str | None, work: Dict[str, float] | None = None,
                     images_of=None) -> ChapterProgress | None:
    """Start the chapter's progress line, replacing an earlier one of this process (``images_of``:
    images trained by a run the plan did not foresee); ``label=None`` stops it."""
    _CHAPTER[:] = [] if label is None else [ChapterProgress(label, work or {}, images_of)]
    return current_chapter()


def current_chapter() -> ChapterProgress | None:
    return _CHAPTER[-1] if _CHAPTER else None
