"""The one table style (mlpl_lab.analysis.display): its cells against hand-computed oracles, and an
executed notebook (07, smoke) whose tables all carry it and whose outputs print no bare dict or list."""
from __future__ import annotations

import ast
import json
import math
import re
from html.parser import HTMLParser

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from mlpl_lab.analysis import benchmark as bm
from mlpl_lab.analysis.display import (MAX_DECIMALS, PERCENT_DIGITS, flags_table, interval_text,
                                       number_text, styled, value_text)
from mlpl_lab.analysis.tables import results_view


class Run:
    def __init__(self, mAP, seed, converged=True, best_epoch=1):
        self.spec = type("Spec", (), {"seed": seed, "key": None})()
        self.best = {"test_mAP": mAP, "test_CF1": mAP / 2, "test_OF1": mAP / 4}
        self.best_epoch, self.converged, self.history = best_epoch, converged, []


def half_width(values):
    """The 95 % Student-t half-width t(0.975, n − 1) · s / √n, written from the formula."""
    v = np.asarray(values, dtype=float)
    return stats.t.ppf(0.975, len(v) - 1) * v.std(ddof=1) / math.sqrt(len(v))


# --- the style on hand-made frames --------------------------------------------------------------

def test_number_kinds_by_hand():
    assert number_text(20.854161, "percent") == "20.9"
    assert number_text(2.0, "count") == "2" and number_text(0.123456) == "0.12"
    assert number_text(0.0004, "p") == "< 0.001" and number_text(0.04712, "p") == "0.047"
    assert number_text(True) == "✓" and number_text(np.bool_(False)) == "✗"
    assert number_text(float("nan"), "percent") == "—" and number_text(None) == "—"
    assert number_text(0.123456, "real", digits=9) == "0.123"  # never more than MAX_DECIMALS
    assert value_text({"width": 8, "head_kwargs": {"dropout": 0.0}}) == "width = 8, head_kwargs = (dropout = 0)"
    assert value_text([0, 1]) == "0, 1"


def test_interval_text_by_hand():
    assert interval_text(23.84, 7.349, 2) == "23.8 ± 7.3 (2)"
    assert interval_text(23.84, 7.349, 2, unconverged=True) == "23.8 ± 7.3 (2) †"
    assert interval_text(22.44, float("nan"), 1) == "22.4 (1 seed)"
    assert interval_text(float("nan")) == "—"


def test_benchmark_cells_read_as_the_style():
    res = {"sp": {"AN": [Run(50.0, 0, converged=False), Run(53.0, 1)], "X": [Run(61.0, 0)]}}
    t = bm.formatted(bm.cell_frame(res), ["AN", "X"], ["sp"])
    assert t.loc["AN", "sp"] == f"51.5 ± {half_width([50.0, 53.0]):.1f} (2) †"
    assert t.loc["X", "sp"] == "61.0 (1 seed)"


def test_results_view_cells_bold_and_precision():
    results = {"full labels": [Run(90.0, 0), Run(91.0, 1)],
               "AN": [Run(50.0, 0), Run(50.4, 1)],
               "X": [Run(70.0, 0), Run(70.5, 1, converged=False, best_epoch=2)],
               "Y": [Run(69.8, 0), Run(69.9, 1)],
               "Z": [Run(60.0, 0)]}
    st = results_view(results)
    shown = st.data
    h = half_width([70.0, 70.5])
    assert shown.loc["X", "mAP"] == f"{np.mean([70.0, 70.5]):.1f} ± {h:.1f} (2) †"
    assert shown.loc["Z", "mAP"] == "60.0 (1 seed)"
    assert shown.loc["X", "best epoch"] == "2–3" and shown.loc["AN", "best epoch"] == "2"
    assert shown.loc["X", "converged"] == "1/2"
    # bold: the best of the column without the oracle (X, 70.25 ± 3.18) and what is tied with it
    # within an interval (Y: 69.85 lies inside X's); AN (50.2 ± 2.5) and Z (60.0, one seed) are
    # not; the oracle is higher than all but left out of the comparison
    ctx = st._compute().ctx
    col = list(shown.columns).index("mAP")
    bold = {shown.index[r] for (r, c), props in ctx.items() if c == col and ("font-weight", "bold") in props}
    assert bold == {"X", "Y"}
    html = st.to_html()
    assert "<caption>" in html and "95 % Student-t interval" in html
    # the display is a copy: the numbers the records read are untouched
    assert results["X"][1].best["test_mAP"] == 70.5


def test_ties_without_intervals_and_by_row():
    frame = pd.DataFrame({"mAP": [21.44, 21.36, 20.0], "CF1": [10.0, 12.0, 11.0]}, index=["a", "b", "c"])
    st = styled(frame, "caption")
    ctx = st._compute().ctx
    bold = {(frame.index[r], frame.columns[c]) for (r, c), p in ctx.items() if ("font-weight", "bold") in p}
    # a (21.4) and b (21.4) are equal at the shown precision; CF1's best is b alone
    assert bold == {("a", "mAP"), ("b", "mAP"), ("b", "CF1")}
    by_row = styled(frame, "caption", percent=True, axis=1)
    ctx = by_row._compute().ctx
    bold = {(frame.index[r], frame.columns[c]) for (r, c), p in ctx.items() if ("font-weight", "bold") in p}
    assert bold == {("a", "mAP"), ("b", "mAP"), ("c", "mAP")}


def test_no_cell_carries_more_than_the_stated_decimals():
    rng = np.random.default_rng(0)
    frame = pd.DataFrame({"mAP": rng.uniform(0, 100, 5), "share": rng.uniform(0, 1, 5),
                          "seeds": [1, 2, 3, 4, 5], "tau": rng.uniform(0, 0.1, 5)})
    before = frame.copy()
    shown = styled(frame, "caption", digits={"tau": 3}).data
    pd.testing.assert_frame_equal(frame, before)  # the display is a copy
    assert all(len(x.split(".")[1]) == PERCENT_DIGITS for x in shown["mAP"])
    assert all(len(x.split(".")[1]) == 2 for x in shown["share"])
    assert list(shown["seeds"]) == ["1", "2", "3", "4", "5"]
    assert all(len(x.split(".")[1]) == 3 for x in shown["tau"])


def test_flags_become_a_check_grid():
    st = flags_table({"full labels · single positive": False, "AN · single positive": True,
                      "AN · drop 50 %": False}, "caption")
    shown = st.data
    assert shown.loc["AN", "single positive"] == "✓" and shown.loc["AN", "drop 50 %"] == "✗"
    assert shown.loc["full labels", "drop 50 %"] == "—"
    per_seed = flags_table({"AN": [False, True]}, "caption", seed_labels={"AN": [3, 4]}).data
    assert list(per_seed.columns) == ["seed 3", "seed 4"] and list(per_seed.loc["AN"]) == ["✗", "✓"]


def test_bad_interval_argument_says_what_to_pass():
    with pytest.raises(TypeError, match="frames aligned with the table"):
        styled(pd.DataFrame({"mAP": [1.0]}), "c", half=0.5)


# --- an executed notebook -----------------------------------------------------------------------

class _Tables(HTMLParser):
    """Every <table> of an HTML output: its caption and its cells' text."""

    def __init__(self):
        super().__init__()
        self.tables, self._cell, self._caption = [], None, None

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self.tables.append({"caption": None, "cells": []})
        elif tag in ("td", "th"):
            self._cell = []
        elif tag == "caption":
            self._caption = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.tables[-1]["cells"].append("".join(self._cell).strip())
            self._cell = None
        elif tag == "caption" and self._caption is not None:
            self.tables[-1]["caption"] = "".join(self._caption).strip()
            self._caption = None

    def handle_data(self, data):
        for part in (self._cell, self._caption):
            if part is not None:
                part.append(data)


NUMBER = re.compile(r"(?<![\w.])[-+−]?\d+\.(\d+)(?![\w.])")
VALUE = re.compile(r"[-+−<]?\s?\d[\d.,;:/\s±()†%×—–-]*?(\(\d+ seeds?\))?[\s†]*")
INTERVAL = re.compile(r"^[-+−]?\d+\.(\d+) ± \d+\.(\d+) \(\d+\)( †)?$")
BARE = (dict, list, tuple, set)


def _is_bare_container(text: str) -> bool:
    text = text.strip()
    if not text or text[0] not in "{[(":
        return False
    try:
        return isinstance(ast.literal_eval(text), BARE)
    except (ValueError, SyntaxError):  # a repr with objects inside: {'x': tensor(...)} reads the same
        return bool(re.match(r"^[{\[(].*[}\])]$", text, re.S)) and ("': " in text or "', " in text)


def _executed(tmp_path_factory, executed_notebooks, name):
    executed_notebooks(name)  # runs once per session, shared with tests/test_notebook_07.py
    found = sorted(tmp_path_factory.getbasetemp().glob(f"executed*/{name}"))
    assert found, f"the executed copy of {name} was not found under {tmp_path_factory.getbasetemp()}"
    return json.loads(found[-1].read_text(encoding="utf-8"))


def check_outputs(nb):
    """``(problems, tables, tables with bold cells)`` of an executed notebook: tables without a
    caption, cells with more than MAX_DECIMALS decimals or an interval not at PERCENT_DIGITS,
    bare dicts or lists printed or shown, raw long numbers."""
    tables, problems, bold_tables = [], [], 0
    for i, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []):
            kind = out["output_type"]
            if kind == "stream":
                for line in "".join(out["text"]).splitlines():
                    if _is_bare_container(line):
                        problems.append(f"cell {i} prints a bare dict or list: {line[:80]}")
                    if re.search(r"\d+\.\d{5,}", line):
                        problems.append(f"cell {i} prints a number with 5 or more decimals: {line[:80]}")
                continue
            data = out.get("data", {})
            html = "".join(data.get("text/html", ""))
            if "<table" in html:
                parser = _Tables()
                parser.feed(html)
                for t in parser.tables:
                    tables.append(t)
                    if not t["caption"]:
                        problems.append(f"cell {i}: a table without a caption (not the lab's style)")
                    for c in t["cells"]:
                        # a value cell (numbers, an interval, a list of values) carries at most
                        # MAX_DECIMALS; a prose cell may quote a paper's setting (EMA 0.9997), never 5
                        most = MAX_DECIMALS if VALUE.fullmatch(c) else 4
                        if any(len(m.group(1)) > most for m in NUMBER.finditer(c)):
                            problems.append(f"cell {i}: a cell with more than {most} decimals: {c}")
                        m = INTERVAL.match(c)
                        if m and {len(m.group(1)), len(m.group(2))} != {PERCENT_DIGITS}:
                            problems.append(f"cell {i}: an interval cell not at {PERCENT_DIGITS} decimal: {c}")
                    if t["caption"] and "Bold:" in t["caption"] and "font-weight: bold" in html:
                        bold_tables += 1
            elif not any(k.startswith("image/") or "widget" in k for k in data):
                text = "".join(data.get("text/plain", ""))
                head = text.split(": ", 1)[-1] if re.match(r"^[\w ]+: [{\[(]", text) else text
                if _is_bare_container(head):
                    problems.append(f"cell {i} shows a bare dict or list: {text[:80]}")
                if re.fullmatch(r"\s*[-+]?\d+\.\d{4,}\s*", text):
                    problems.append(f"cell {i} shows a raw number: {text}")
    return problems, tables, bold_tables


@pytest.mark.notebook
def test_notebook_07_tables_read_as_a_paper(tmp_path_factory, executed_notebooks):
    nb = _executed(tmp_path_factory, executed_notebooks, "07_benchmark.ipynb")
    rec = executed_notebooks("07_benchmark.ipynb")
    problems, tables, bold_tables = check_outputs(nb)
    assert not problems, "\n".join(problems)
    assert len(tables) >= 10  # protocol, rows, mAP / CF1 / OF1, convergence, ranks, gap, per class, cost, claims, tuning
    assert bold_tables >= 3   # the three metric tables mark their best cells
    # every mAP cell reads as its record (the display formats the numbers the records keep)
    cells = [c for t in tables if t["caption"].startswith("Test mAP") for c in t["cells"]]
    for method, row in rec["mAP"].items():
        for regime, v in row.items():
            assert any(c.startswith(f"{v:.{PERCENT_DIGITS}f} ± ") for c in cells), (method, regime, v)
    # the convergence flags are a ✓ / ✗ table, not a printed dict
    flags = [t for t in tables if t["caption"].startswith("Did every run")]
    assert flags and {"✓", "✗"} & set(flags[0]["cells"])
