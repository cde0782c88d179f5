"""Issue 36: under the cpu profile every claim of every chapter pairs five seeds.

The runs each claim compares are what each chapter's pure ``specs`` asks for with nothing stored
(nothing trains) and their seeds are counted here. A design that runs a claim's row on fewer seeds (an ablation on
three, a co-training baseline on one) fails, naming the row.
"""
from __future__ import annotations

from types import SimpleNamespace

from mlpl_lab.protocol.asked import nothing_stored

FIVE = [0, 1, 2, 3, 4]


def seeds(runs):
    return sorted(int(getattr(r, "spec", r).seed) for r in runs)


def test_chapter_01_every_regime_on_five_seeds():
    from mlpl_lab.chapters import assume_negative as ch

    out = ch.results(ch.specs(ch.design("cpu"), nothing_stored).now)
    for regime, rows in out.items():
        for row, runs in rows.items():
            assert seeds(runs) == FIVE, (regime, row)


def test_chapter_03_claim_rows_on_five_seeds():
    from mlpl_lab.chapters import opml as ch

    runs = ch.specs(ch.design("cpu"), nothing_stored).now
    sp, full = runs[ch.PARTIAL], runs[ch.FULL]
    # every row named in a claim (opml.claims): OPML-SP, OPML, AN; OPML and BCE with full labels
    for row in ("OPML-SP", "OPML", "AN"):
        assert seeds(sp[row]) == FIVE, row
    for row in ("OPML (full)", "BCE (full)"):
        assert seeds(full[row]) == FIVE, row


def test_chapter_04_table_rows_on_five_seeds():
    from mlpl_lab.chapters import cls as ch

    d = ch.design("cpu")
    table = ch.table_runs(d, ch.specs(d).now)  # RunSpecs: each carries its seed
    assert set(table) == {"drop 50 %", "single positive"}
    for regime, rows in table.items():
        for row, runs in rows.items():  # AN, CLS and the co-training family: each in a claim
            assert seeds(runs) == FIVE, (regime, row)
    assert len(table["single positive"]) == 5  # AN, CLS, Co-teaching, Co-teaching+, JoCoR


def test_chapters_05_and_06_every_row_on_five_seeds():
    from mlpl_lab.chapters import lac, pu_mlc

    d = lac.chapter_design("cpu")
    assert list(d.seeds) == FIVE
    for row, specs in lac.specs(d).now[lac.TABLE].items():
        assert seeds(specs) == FIVE, row
    from mlpl_lab.protocol.asked import nothing_stored

    asked = pu_mlc.specs(pu_mlc.design("cpu"), nothing_stored)
    for family in (asked.now, asked.later):
        for cells in family.values():
            for label, specs in cells.items():
                assert sorted(s.seed for s in specs) == FIVE, label
    assert set(asked.now["p=0.1"]) == set(pu_mlc.LADDER) | {pu_mlc.ORACLE}


def test_chapter_07_same_head_baseline_on_the_lac_cells_seeds():
    """The benchmark's LAC cell reports the fresh seeds 1-5; the AN with LAC's head must run on
    exactly those, or the claim pairs fewer (chapter 05's own AN row runs on 0-4)."""
    from mlpl_lab.chapters import benchmark as ch

    from mlpl_lab.protocol.asked import nothing_stored

    design = ch.design("cpu")
    now = ch.specs(design, nothing_stored).now
    assert sorted(s.seed for s in now["single positive"]["LAC"]) == [1, 2, 3, 4, 5]
    assert sorted(s.seed for s in now[ch.SAME_HEAD_LABEL]["single positive"]) == [1, 2, 3, 4, 5]
    for (reg, row), s in design.seeds.items():
        assert len(s) == 5, (reg, row)
