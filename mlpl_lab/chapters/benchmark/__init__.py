"""Notebook 07 — every method on one protocol: the grid, its run specs, tables, claims and views.

The chapter in five files, each named for what it does: :mod:`.design` (the grid of every
profile, :func:`design`), :mod:`.runs` (:func:`specs`: the runs the design asks for, and
:func:`results`: the ensured runs arranged), :mod:`.tables` (every table and record computed from
the runs), :mod:`.claims` (the claims and what they found) and :mod:`.views` (what the notebook
shows; no view asks for a run). The rows are the catalogue's entries for 07 with their recipes
(:mod:`mlpl_lab.protocol.recipes`); the chapter imports no other chapter.

**Protocol** (one for every cell): the profile's data (same images, same train/val/test split
and same observed-label draw per seed: seed ``s`` draws all three), the profile's backbone,
input size, epochs, batch size, optimiser and learning rate, each method's paper defaults
(the chapters' choices: k for EPR/ROLE from the clean validation set, CLS's τ from its paper's
COCO column for the regime, the Co-teaching family's ramp scaled to the run as in chapter 04),
test mAP at the best clean-validation epoch. Rows that cannot follow it say so in their
recipe's ``note``: LAC needs its label-query head and trains in two stages with the optimiser of
its paper (its recipe, shared with chapter 05); the oracle reads the true labels (one run per seed
serves every column).

**Equal-budget tuning** (``tuning=None``: on for the cpu and gpu designs, off for smoke; the one
tuning stage shared with chapter 02, :func:`mlpl_lab.protocol.tuning.stage`): each method with a declared grid
(:data:`TUNING_GRIDS`) gets the same number of trials (the first points of its grid, paper
default first) under each regime on the profile's first seed (the *selection seed*); the trial
with the best clean-validation mAP is then re-run on **fresh seeds** — as many as the profile has
seeds, all after the selection seed — and only those are reported (the selection trials never
are: their test mAP is optimistically biased by the choice). Every row, tuned or not, reports the
same fresh seeds, so the pairing by seed holds. Methods without hyperparameters to tune (AN, WAN,
...) have one trial, their one configuration; the oracle and LAC (chapter 05's design) have none.

**As data**: :func:`design` (the profile's :data:`DESIGNS` entry and the notebook's
:data:`PARAMETERS`) → :func:`specs` (pure: the trials, each cell once its choice is read from the
stored trials, LAC's own-head AN) → the notebook's :func:`mlpl_lab.protocol.asked.ensure_asked` →
the tables and views, which take the ensured runs.

**Profiles** (:data:`DESIGNS`):

* ``smoke``: AN and GR × single positive and drop 50 % × 2 seeds, with the oracle as the
  reference row (the smoke grid).
* ``cpu``: every row under uniform single positive, and a block of ten rows (the oracle, AN,
  GR, EM, ROLE, LL-R, CLS, LAC, OPML-SP and PU-MLC) under the size-biased single positive and
  drop 50 % as well, tuned, on the five fresh seeds 1–5. Runs whose spec a chapter already asks
  for (02's tuned rows, 03's, 04's and 05's seeds) are the chapters' runs; the benchmark trains
  the rest. The block is what Friedman's test and the critical-difference diagram rank; the
  other four regimes are left out (:func:`left_out` lists them).
* ``gpu``: the cpu grid at the gpu profile's scale (ResNet-18, 64 px), tuned, on the five fresh
  seeds: a series sized for a course, one evening on one GPU (``mlpl-lab plan --profile gpu``).
  The full grid — every row × every regime it applies to — is several times the runs
  (``mlpl-lab plan`` counts them); a notebook asks for it with ``methods=[...]`` and ``regimes=[...]``.
"""
from __future__ import annotations

from ...protocol.registry import Chapter
from .claims import CONTROL_WAITS, SAME_HEAD_PAPER, claims, selection_claims, summary  # noqa: F401
from .design import (AN, BOUND_CHECK, DATA_SETS, DESIGNS, EVERY_ROW, FAMILIES, FAMILY_BLOCK,  # noqa: F401
                     FAMILY_MIN_GAP, FAMILY_REGIME, FLATTERS_FAMILY, ORACLE, OWN_DATA_SET, PARAMETERS, REFERENCE_ROWS,
                     SAME_HEAD_FAMILY, SAME_HEAD_LABEL, SAME_HEAD_ROW, TRIALS, TUNING_GRIDS, data_set_scene,
                     BenchmarkDesign, Preset, beats_an_family, design, left_out, merged, pending_name, trained_rows)
from .runs import (LENGTH_CHECK, BenchmarkRuns, bound_check_specs, cell_label, cell_trials, choices,  # noqa: F401
                   family_check_specs, family_specs, length_check_specs, paired_an_label, results, same_head_specs,
                   specs, stages, trial_label, waiting)
from .tables import (MIN_FAMILIES, REGIME_RANKS_NOTE, block_mean, bound_length_record, bound_length_table,  # noqa: F401
                     describe_data_set, family_frame, family_gaps, family_ranks, family_record, family_table,
                     length_check_agreement,
                     measured_gaps, observed_tuning_frame, per_class, rare_vs_frequent, records, rows_table,
                     selection_frame, tables, write_csv)
from .views import (METRIC_WHAT, bound_length_view, convergence_view, cost_view, families_view,  # noqa: F401
                    family_test_view, friedman_view, gap_view, metric_view, observed_tuning_view, pairs_text, protocol,
                    protocol_view, rare_view, regimes_markdown, rows_view, selection_view, seeds_text,
                    tuning_view)

#: the chapter, as :mod:`mlpl_lab.protocol.registry` finds it (no live exercise: it reads the
#: other chapters' runs)
CHAPTER = Chapter("07_benchmark")
