"""The method catalogue is the one place a method row is written: its labels are literals in one
module only, every row a chapter shows resolves to an entry, and what the chapters read from it
(07's rows, the tuning grids, the colours, the schedule-bound flag) is what the papers give."""
from __future__ import annotations

import ast
import re
from collections import defaultdict
from pathlib import Path

import pytest

from mlpl_lab import catalogue as C
from mlpl_lab.catalogue import LABEL
from mlpl_lab.protocol import recipes
from mlpl_lab.protocol import regimes as protocol_regimes
from mlpl_lab.catalogue import paper_claims

PKG = Path(__file__).resolve().parent.parent / "mlpl_lab"


def _literal_modules():
    """``{label: {module}}``: the modules under mlpl_lab/ holding a string constant equal to a
    catalogue label. One-letter labels (GR's components v and L) are left out: a single letter is
    also an ordinary name in formulas (the panel's curve "v")."""
    labels = {e.label for e in C.ENTRIES if len(e.label) > 1}
    found = defaultdict(set)
    for path in PKG.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value in labels:
                found[node.value].add(path.relative_to(PKG).as_posix())
    return found


def test_each_label_is_a_literal_in_one_module_only():
    """Bug caught: a label retyped in a chapter, the palette or the tuning grids (the rows drift
    apart when it changes in one place only)."""
    spread = {label: sorted(mods) for label, mods in _literal_modules().items() if len(mods) > 1}
    assert not spread, f"labels written in more than one module: {spread}"


def test_colours_are_distinct_hex_per_method_and_aliases_take_their_methods():
    own = [e for e in C.ENTRIES if e.alias_of is None]
    assert all(e.colour and re.fullmatch(r"#[0-9a-f]{6}", e.colour) for e in own), \
        [e.key for e in own if not e.colour]
    colours = [e.colour for e in own]
    assert len(set(colours)) == len(colours), "two methods share a colour"
    from mlpl_lab.viz.palette import method_colour

    for e in C.ENTRIES:
        if e.alias_of:
            assert e.colour is None and method_colour(e.label) == C.entry(e.alias_of).colour


def _chapter_rows():
    from mlpl_lab.chapters import assume_negative, benchmark, cls, gr, lac, opml, pu_mlc

    return {
        "01": tuple(assume_negative.METHODS),
        "02": gr.ZOO_ALL + tuple(gr.ABLATION_LABELS),
        "03": tuple(opml.ROWS) + (opml.FULL_KEY[0],),
        "04": (LABEL.an, LABEL.cls, LABEL.cls_h, LABEL.cls_l, LABEL.clc) + cls.FAMILY,
        "05": tuple(lac.ROWS) + (lac.CONTROL, lac.CODE_START),
        "06": tuple(pu_mlc.LADDER) + (pu_mlc.PU, pu_mlc.PBCE, pu_mlc.CONTROL, pu_mlc.ORACLE),
        "07": tuple(r.label for r in recipes.rows()),
    }


@pytest.mark.parametrize("chapter", ["01", "02", "03", "04", "05", "06", "07"])
def test_every_chapter_row_resolves_to_an_entry_of_that_chapter(chapter):
    rows = _chapter_rows()[chapter]
    missing = [r for r in rows if C.by_label(r) is None]
    assert not missing, f"{chapter}: rows without a catalogue entry: {missing}"
    # "AN" is chapter 05's row of AN on LAC's head: the entry of AN, shown there
    elsewhere = [r for r in rows if chapter not in C.by_label(r).chapters]
    assert not elsewhere, f"{chapter}: entries that do not list the chapter: {elsewhere}"


def test_benchmark_rows_are_the_catalogue_entries_of_07_with_their_methods():
    """Oracle: the benchmark's rows as the papers name them (27 rows; BoostLU on the LL losses),
    and chapter 08's Crisp and P(k) grain, taught in 08."""
    from mlpl_lab.chapters import benchmark

    rows = {r.label: r.method for r in recipes.rows()}
    assert len(rows) == 29
    assert rows[LABEL.crisp] == "crisp" and rows[LABEL.cardinality_distribution] == "cardinality"
    assert recipes.row(LABEL.crisp).chapter == "08"
    assert rows[LABEL.ll_ct_boostlu] == "ll_ct" and rows[LABEL.lac] == "lac" and rows[LABEL.oracle] == "full"
    assert [r.label for r in recipes.rows()][:3] == ["full labels", "AN", "WAN"]
    row = recipes.row(LABEL.opml_sp)
    assert row.params(None, "single positive", 1) == {"a": 0.0, "b": 0.0}
    assert recipes.row(LABEL.oracle).chapter == "01" and recipes.row("Focal").chapter == "02"


def test_tuning_grids_and_their_first_trials():
    """Oracle: GR's grid written out (paper schedule and q2 = 0.01 first) and its first three
    product points as differences from the default."""
    from mlpl_lab.protocol import tuning

    assert tuning.GRIDS["GR"] == {"schedule": ["paper", "code"], "q2": [0.01, 0.05]}
    assert tuning.trial_points("GR", 3) == [{}, {"q2": 0.05}, {"schedule": "code"}]
    assert tuning.GRIDS["JoCoR (λ=0.1)"] == {"forget_rate": [0.2, 0.1, 0.3]}
    assert "AN" not in tuning.GRIDS and "full labels" not in tuning.GRIDS


def test_schedule_bound_is_the_registry_flag():
    """GR moves k̂ and v with the epoch; its all-off ablation and AN do not; LL-R's clean rate
    follows the schedule (the registry's flags, read through the entries)."""
    assert C.entry("gr").schedule_bound and C.entry("gr_k").schedule_bound
    assert not C.entry("an").schedule_bound and not C.entry("gr_none").schedule_bound
    assert not C.entry("gr_l").schedule_bound and C.entry("ll_r").schedule_bound


def test_paper_claims_in_the_claims_tables_order():
    assert list(C.paper_claims()) == ["GR", "OPML-SP", "CLS", "LAC", "PU-MLC", "EM+APL", "ROLE", "LL-R",
                                      "LL-R + BoostLU"]


def test_label_lookups_and_citations():
    assert LABEL.opml_sp == "OPML-SP" and C.entry("jocor_row").label == "JoCoR (λ=0.1)"
    assert C.citation_aliases()["OPML-SP"] == ("opml",) and "EM+APL" in C.citation_aliases()
    with pytest.raises(KeyError, match="no catalogue entry"):
        C.entry("nope")


def test_one_regime_table():
    """Chapters 01, 04 and 07 read their regimes from core.regimes' table (drop 50 % hides half)."""
    from mlpl_lab.chapters import assume_negative, benchmark, cls
    from mlpl_lab.core import regimes as R

    for table in (assume_negative.REGIMES, cls.REGIMES, protocol_regimes.REGIMES):
        assert all(R.REGIME_TABLE[label] == value for label, value in table.items())
    assert cls.REGIMES["drop 50 %"] == ("drop_positives", {"alpha": 0.5})
    assert list(assume_negative.REGIMES) == ["single positive", "drop 50 %", "known 10 %"]
    with pytest.raises(KeyError):
        R.regime_table("drop 60 %")
