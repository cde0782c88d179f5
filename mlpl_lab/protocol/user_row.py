"""A researcher's own method as one more row of the benchmark (``mlpl-lab benchmark --add FILE``).

The row follows the benchmark's protocol (chapter 07's design, :mod:`mlpl_lab.chapters.benchmark`,
handed in by the command): the design's profile, regimes and reported seeds; under a tuned design,
the equal-budget tuning stage of :mod:`mlpl_lab.protocol.tuning` -- the first ``trials_for(profile)`` points of the file's
``GRID`` on the selection seed, the one with the best clean-validation mAP re-run on the fresh
seeds, and only those reported -- and under an untuned design the grid's first point (its
default) on the reported seeds. Its specs are the profile's with method
:data:`~mlpl_lab.methods.registry.USER_METHOD` and the file's content hash (``source``), so
they key by the file's content.

Every other row is read, never trained: :func:`course` takes each cell of the design the
benchmark itself would report (its ``specs``, handed in) where all its runs are stored (the
shipped pack imported first), and names the cells that are not.

:func:`claims` asks one question, declared before any run is read: does the new row beat AN,
and the best course row, under each regime (m = 2 per regime, family-wise intervals; the best
course row is the one with the highest mean test mAP on these runs). Fewer than three paired
seeds: inconclusive, shown not judged (:mod:`mlpl_lab.analysis.claims`).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Tuple

from ..analysis import benchmark as bm
from ..analysis.claims import Claim, Family, claim_id, claims_table
from ..catalogue import LABEL
from ..methods.registry import USER_METHOD
from ..methods.user_file import UserFile
from ..runs.spec import RunSpec
from . import tuning as tuner
from .asked import Asked, Families, Runs, Stored
from .recipes import reference_rows, rows
from .regimes import REGIMES, regime_slug

AN = LABEL.an


def reserved_labels() -> Dict[str, str]:
    """Lower-cased labels and registered names of the benchmark's rows -> the row: a new row may
    take none of them (``--methods`` resolves both)."""
    out = {}
    for r in rows():
        out.setdefault(r.method.lower(), r.label)
        out[r.label.lower()] = r.label
    return out


@dataclass(frozen=True)
class AddedRow:
    """The benchmark design (chapter 07's :class:`~mlpl_lab.chapters.benchmark.BenchmarkDesign`)
    and the method file whose row it adds."""

    design: Any
    file: UserFile

    @property
    def label(self) -> str:
        return self.file.label

    @property
    def tuned(self) -> bool:
        return self.design.tuning

    def seeds(self, regime: str) -> Tuple[int, ...]:
        """The seeds the row reports under ``regime``: AN's there (the claims pair with them)."""
        d = self.design
        if (regime, AN) in d.seeds:
            return tuple(d.seeds[(regime, AN)])
        return tuple(next(s for (reg, _), s in d.seeds.items() if reg == regime))

    def points(self) -> List[Dict[str, Any]]:
        """The trial points: the grid's first ``trials_for(profile)`` (the equal budget)."""
        return self.file.points(tuner.trials_for(self.design.profile))

    def spec(self, regime: str, seed: int, point: Optional[Dict[str, Any]] = None) -> RunSpec:
        """The run of the row under ``regime`` on ``seed`` with ``point`` (None: the default)."""
        name, params = REGIMES[regime]
        point = self.file.points(1)[0] if point is None else point
        return self.design.profile.spec(USER_METHOD, dict(point, source=self.file.source), name,
                                        params, seed=seed)

    def stage(self, regime: str, stored: Stored) -> tuner.Stage:
        """The tuning stage of the row under ``regime`` (untuned: its default on the seeds)."""
        def make(label, point, seed):
            return self.spec(label, seed, point)

        tuned = {regime: self.points()} if self.tuned else {}
        return tuner.stage(make, tuned, [] if self.tuned else [regime],
                           tuner.selection_seed(self.design.profile), self.seeds(regime), stored)


#: the family of the new row's trials in :func:`specs`
TRIALS = tuner.TRIALS_FAMILY


def specs(added: AddedRow, stored: Stored) -> Asked:
    """The new row's runs only (pure): its trials on the selection seed (family :data:`TRIALS`,
    ``{"<regime> · trial i": [spec]}``), and under each regime ``{label: [spec per seed]}`` once
    its trials are stored (``later``, under the default, until then)."""
    now: Families = {}
    later: Families = {}
    for regime in added.design.grid:
        st = added.stage(regime, stored)
        for i, spec in enumerate(st.trials.get(regime, [])):
            now.setdefault(TRIALS, {})[f"{regime} · trial {i + 1}"] = [spec]
        if regime in st.fresh:
            now.setdefault(regime, {})[added.label] = st.fresh[regime]
        if regime in st.later:
            later.setdefault(regime, {})[added.label] = st.later[regime]
    return Asked(now=now, later=later)


def chosen(added: AddedRow, stored: Stored) -> Dict[str, Dict[str, Any]]:
    """``{regime: the point tuning kept}`` (the default under an untuned design)."""
    out = {}
    for regime in added.design.grid:
        st = added.stage(regime, stored)
        out[regime] = st.kept(regime) if regime in st.chosen else added.file.points(1)[0]
    return out


def course(d, asked: Asked, trials: Dict[Tuple[str, str], List[RunSpec]], stored: Stored
           ) -> Tuple[Runs, Dict[str, Dict[str, int]]]:
    """``(results, missing)``: ``{regime: {row: runs}}`` of every course cell of design ``d`` whose
    reported runs are all stored -- ``asked``: what the benchmark itself asks under ``d`` (its
    ``specs(d, stored)``: the cells its tuning choices read from the stored trials decide), and
    ``trials``: ``{(regime, row): [trial specs]}`` of its tuned cells -- and ``{regime: {row: runs
    not stored}}`` of the others (a tuned cell whose trials are not all stored counts its trials
    and its seeds)."""
    results: Runs = {}
    missing: Dict[str, Dict[str, int]] = {}
    for regime, labels in d.grid.items():
        for label in labels:
            ss = asked.now.get(regime, {}).get(label)
            if ss is None:  # its choice waits on trials that are not stored
                waiting = [s for s in trials.get((regime, label), []) if stored(s) is None]
                missing.setdefault(regime, {})[label] = len(waiting) + len(asked.later.get(regime, {}).get(label, []))
                continue
            runs = [stored(s) for s in ss]
            if all(r is not None for r in runs):
                results.setdefault(regime, {})[label] = runs
            else:
                missing.setdefault(regime, {})[label] = sum(r is None for r in runs)
    return results, missing


def results(added: AddedRow, course_results: Runs, runs: Runs) -> Runs:
    """The course's cells with the new row's reported runs beside them, per regime."""
    out: Runs = {}
    for regime in added.design.grid:
        cells = dict(course_results.get(regime, {}))
        if added.label in runs.get(regime, {}):
            cells[added.label] = runs[regime][added.label]
        if cells:
            out[regime] = cells
    return out


def ranking(results: Runs, regime: str):
    """One regime's rows best first: rank (by mean test mAP, ties averaged; the reference rows
    shown last, unranked), mean, 95 % half-width and seeds, and the cell as text."""
    import pandas as pd

    cells = bm.cell_frame({regime: results[regime]})
    ranks = bm.regime_ranks(cells, exclude=reference_rows())[regime]
    text = bm.formatted(cells, regimes=[regime])[regime]
    frame = cells.set_index("method")[["mean", "ci95", "seeds"]]
    frame.insert(0, "rank", ranks.reindex(frame.index))
    frame["test mAP"] = text.reindex(frame.index)
    ranked = frame[frame["rank"].notna()].sort_values(["rank", "mean"], ascending=[True, False])
    return pd.concat([ranked, frame[frame["rank"].isna()]])


def best_other(results: Runs, regime: str, label: str) -> Optional[str]:
    """The course row with the highest mean test mAP under ``regime`` (the reference rows and the
    new row left out)."""
    cells = bm.cell_frame({regime: results[regime]})
    col = cells[~cells.method.isin(list(reference_rows()) + [label])].dropna(subset=["mean"])
    return None if col.empty else str(col.sort_values("mean", ascending=False).method.iloc[0])


def family(label: str, regimes) -> Family:
    """The question of :func:`claims`, declared from the regimes before any run is read."""
    return Family(f"{label} against the course", 2 * len(list(regimes)),
                  f"does {label} beat AN, and the best course row, under each regime?")


def claims(results: Runs, label: str, regimes) -> Any:
    """The claims table (:func:`mlpl_lab.analysis.claims.claims_table`): per regime, "<label>
    beats AN" and "<label> beats <best course row>" (one claim where AN is the best), paired by
    seed, decided on the family-wise interval of :func:`family`."""
    fam = family(label, regimes)
    rows: List[Claim] = []
    for regime in regimes:
        cells = results.get(regime, {})
        if label not in cells:
            continue
        if AN in cells:
            rows.append(Claim(f"{label} beats AN under {regime}", "— (your method)", label, AN,
                              cells[label], cells[AN], family=fam, id=claim_id("yours_beats_an", regime_slug(regime))))
        best = best_other(results, regime, label)
        if best is not None and best != AN:
            rows.append(Claim(f"{label} beats {best}, the best course row, under {regime}",
                              "— (the best course row by mean test mAP on these runs)", label, best,
                              cells[label], cells[best], family=fam,
                              id=claim_id("yours_beats_best_course_row", regime_slug(regime))))
    return claims_table(rows)


def seconds_per_run(course_results: Runs) -> Optional[float]:
    """AN's mean training + evaluation seconds per run in the served cells (measured where those
    runs were trained), the estimate of one run of the new row; None without AN."""
    an = [r for cells in course_results.values() for r in cells.get(AN, [])]
    if not an:
        return None
    return sum(bm.run_cost(r)["seconds"] for r in an) / len(an)
