"""Readable at a glance: one colour per method in every figure, axis labels in words, no
colliding tick labels (plots, heatmaps, colour bars) or legend entries, no table a notebook shows
over the size limits, records that print no raw value and leave no empty output area.

The figure checks read what a report's figures showed: every notebook executed as a report logs,
after each cell, each figure's colliding labels (``mlpl_lab.viz.layout.tick_overlaps``), legend
colours and axis labels to ``<stem>.figures.jsonl`` beside the executed notebook
(``mlpl_lab.reporting.figure_log``). The smoke series is executed once per session and shared with
the notebook tests; the reports ``$MLPL_LAB_REPORTS`` names (the cpu report in CI) are read too."""
from __future__ import annotations

import itertools
import json
import math
import re
from html.parser import HTMLParser

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import pytest  # noqa: E402
from matplotlib.colors import to_hex, to_rgb  # noqa: E402

from mlpl_lab.analysis.display import MAX_COLUMNS, MAX_ROWS, header_words  # noqa: E402
from mlpl_lab.methods import METHODS  # noqa: E402
from mlpl_lab.viz.layout import legend_colours, tick_overlaps  # noqa: E402
from mlpl_lab.viz.palette import METHOD_COLOURS, colours_for, method_colour, method_label  # noqa: E402
from mlpl_lab.protocol import recipes

NOTEBOOKS = ("00_partial_labels.ipynb", "01_assume_negative.ipynb", "02_gr_loss.ipynb", "03_opml.ipynb",
             "04_cls.ipynb", "05_lac.ipynb", "06_pu_mlc.ipynb", "07_benchmark.ipynb")


def compared_groups():
    """The methods each chapter compares in one figure or table, by the labels it shows."""
    from mlpl_lab.chapters import assume_negative, benchmark, cls, gr, lac, opml, pu_mlc

    opml_labels = ("AN", "ZLPR", "OPML", "OPML+HR", "OPML+HR+LS", "OPML+HR+LC", "OPML-SP", "BCE (full)")
    return {
        "01": tuple(assume_negative.METHODS),
        "02 zoo": gr.ZOO_ALL,
        "02 ablation": ("AN (all off)", "GR (all on)") + tuple(gr.ABLATION_LABELS),
        "03": opml_labels,
        "04": ("AN", "CLS", "CLS-H", "CLS-L", "CLC") + cls.FAMILY,
        "05": tuple(dict.fromkeys(tuple(lac.ROWS) + (lac.CONTROL, lac.CODE_START))),
        "06": tuple(pu_mlc.LADDER) + (pu_mlc.PU, pu_mlc.PBCE, pu_mlc.CONTROL, pu_mlc.ORACLE),
        "07": tuple(r.label for r in recipes.rows()),
    }


# --- the palette -------------------------------------------------------------------------------

def test_every_registered_method_has_its_own_colour():
    for name in METHODS:
        assert method_label(name) is not None, f"the registered method {name!r} has no colour"
    colours = [method_colour(name) for name in METHODS]
    labels = {method_label(name) for name in METHODS}
    # distinct registry names of distinct methods never share a colour
    assert len({METHOD_COLOURS[label] for label in labels}) == len(labels)
    assert len(set(METHOD_COLOURS.values())) == len(METHOD_COLOURS), "two labels share a colour"
    assert all(re.fullmatch(r"#[0-9a-f]{6}", c) for c in colours)


@pytest.mark.parametrize("group", list(compared_groups()))
def test_the_methods_a_chapter_compares_get_distinct_colours(group):
    labels = compared_groups()[group]
    missing = [label for label in labels if method_colour(label) is None]
    assert not missing, f"{group}: no colour for {missing}"
    # two labels of the same method (BCE (full) is the oracle) may share it; others differ visibly
    by_method = {}
    for label in labels:
        by_method.setdefault(method_label(label), label)
    rgb = {m: np.array(to_rgb(METHOD_COLOURS[m])) for m in by_method}
    for a, b in itertools.combinations(rgb, 2):
        assert np.abs(rgb[a] - rgb[b]).sum() > 0.25, f"{group}: {a} and {b} look alike"


def test_chapter_labels_resolve_to_the_method_they_name():
    assert method_label("JoCoR (λ=0.1)") == "JoCoR" and method_label("jocor") == "JoCoR"
    assert method_label("two-stage + queue (LAC)") == "LAC" == method_label("lac")
    assert method_label("AN · train") == "AN" and method_label("OPML a=0, b=0") == "OPML"
    assert method_label("full labels (oracle)") == method_label("BCE (full)") == "full labels"
    assert method_label("τ_h = 0.012") is None
    # labels that name no method take spare colours unused in the same figure
    got = colours_for(["AN", "seconds", "peak memory"])
    assert got["AN"] == METHOD_COLOURS["AN"] and len(set(got.values())) == 3


def _fake_runs(values):
    class Run:
        def __init__(self, v):
            self.v = v

        def curve(self, key):
            return list(self.v)

    return [Run(values)]


def test_two_chapters_figures_draw_a_method_in_the_same_colour():
    """Curves as chapter 04 draws them (plot_curves) and bars as chapters 02/07 draw them
    (plot_metric_bars, plot_per_class): CLS and AN are the same colour in each, read back from the
    Line2D and the bar patches."""
    from mlpl_lab.viz.benchmark_plots import plot_per_class
    from mlpl_lab.viz.results import plot_curves, plot_metric_bars

    ax1 = plot_curves({"AN": _fake_runs([50, 52, 53]), "JoCoR (λ=0.1)": _fake_runs([49, 50, 51]),
                       "CLS": _fake_runs([51, 54, 56])})
    lines = {line.get_label(): to_hex(line.get_color()) for line in ax1.get_lines()}
    table = pd.DataFrame({"mAP": [60.0, 52.0, 57.0]}, index=["full labels", "AN", "CLS"])
    ax2 = plot_metric_bars(table)
    bars = {name: to_hex(p.get_facecolor()) for name, p in zip(table.index, ax2.patches)}
    gain = pd.DataFrame({"GR": [1.0, -0.5], "CLS": [2.0, 0.3], "train_frequency": [0.1, 0.2]},
                        index=["red circle", "blue square"])
    ax3 = plot_per_class(gain, "single positive")
    per_class = legend_colours(ax3.figure)
    for method in ("AN", "CLS"):
        assert lines[method] == bars[method] == METHOD_COLOURS[method]
    assert per_class["CLS"] == METHOD_COLOURS["CLS"] and per_class["GR"] == METHOD_COLOURS["GR"]
    assert ax1.get_ylabel() == "validation mAP (%)" and ax2.get_ylabel() == "test mAP (%)"
    plt.close("all")


# --- tick labels ---------------------------------------------------------------------------------

def test_tick_overlaps_finds_crowded_labels_and_spread_removes_them():
    from mlpl_lab.viz.layout import spread_tick_labels

    fig, ax = plt.subplots(figsize=(3, 2))
    names = [f"a long class name {i}" for i in range(12)]
    ax.bar(range(12), np.arange(12))
    ax.set_xticks(range(12), names)
    found = tick_overlaps(fig)
    assert found and all(f["axis"] == "x" for f in found)
    spread_tick_labels(ax, "x")
    assert tick_overlaps(fig) == []
    fig2, ax2 = plt.subplots(figsize=(6, 2))
    ax2.set_xticks(range(3), ["a", "b", "c"])
    assert tick_overlaps(fig2) == []
    plt.close("all")


def test_heatmap_column_labels_that_touch_are_found_and_07s_plots_wrap_them():
    """Bug caught: 07's gap heatmap printed "single positivesingle positive (size-biased)": the two
    boxes touched without overlapping, so a check for overlap alone passed."""
    import seaborn as sns

    from mlpl_lab.viz.benchmark_plots import plot_gap, plot_grid

    sns.set_theme(context="notebook", style="whitegrid")  # the notebooks' theme (setup_notebook)
    try:
        cols = ["single positive", "single positive (size-biased)", "drop 50 %"]
        frame = pd.DataFrame(np.linspace(0, 1, 30).reshape(10, 3), index=[f"m{i}" for i in range(10)], columns=cols)
        fig, ax = plt.subplots(figsize=(1.6 * 3 + 3, 5.5))
        sns.heatmap(frame, ax=ax, cbar_kws={"label": "share"})
        fig.canvas.draw()
        boxes = [t.get_window_extent(fig.canvas.get_renderer()) for t in ax.get_xticklabels()]
        assert boxes[1].x0 - boxes[0].x1 < 3 * fig.dpi / 72  # by hand: closer than 3 points
        assert [f["labels"] for f in tick_overlaps(fig)] == [(cols[0], cols[1])]
        assert tick_overlaps(plot_gap(frame, frame - 0.1, frame + 0.1).figure) == []
        assert tick_overlaps(plot_grid(100 * frame).figure) == []
    finally:
        sns.reset_orig()
        plt.close("all")


def test_colour_bar_ticks_and_legend_entries_are_checked():
    fig, ax = plt.subplots(figsize=(3, 2))
    image = ax.imshow(np.arange(4).reshape(2, 2))
    bar = fig.colorbar(image)
    bar.set_ticks([0.0, 0.02, 0.04], labels=["zero", "two hundredths", "four hundredths"])
    assert any(f["axis"] == "y" and "zero" in f["labels"] for f in tick_overlaps(fig))  # the colour bar's
    fig2, ax2 = plt.subplots(figsize=(3, 2))
    ax2.plot([0, 1], label="one")
    ax2.plot([1, 0], label="two")
    ax2.legend(labelspacing=-1.2)  # rows drawn into each other
    assert [f["labels"] for f in tick_overlaps(fig2) if f["axis"] == "legend"] == [("one", "two")]
    ax2.legend()  # the default spacing: rows apart
    assert [f for f in tick_overlaps(fig2) if f["axis"] == "legend"] == []
    plt.close("all")


def test_per_class_gains_of_twenty_classes_do_not_overlap():
    """07's per-class figure with the scenes' 20 classes (its labels overlapped, issue 48)."""
    from mlpl_lab.data import make_scenes
    from mlpl_lab.viz.benchmark_plots import plot_per_class

    names = make_scenes(4, seed=0).class_names
    rng = np.random.default_rng(0)
    gain = pd.DataFrame({"GR": rng.normal(size=20), "LAC": rng.normal(size=20), "CLS": rng.normal(size=20),
                         "train_frequency": np.sort(rng.uniform(0.1, 0.2, 20))}, index=names)
    ax = plot_per_class(gain, "single positive")
    assert tick_overlaps(ax.figure) == []
    plt.close("all")


def _read_log(path):
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _figure_log(executed_notebooks, name):
    executed_notebooks(name)
    return _read_log(executed_notebooks.out / name.replace(".ipynb", ".figures.jsonl"))


def given_report_logs():
    """``{folder: {notebook: log entries}}`` of the reports ``$MLPL_LAB_REPORTS`` names (folders
    ``mlpl-lab report`` wrote, separated by ``os.pathsep``), for the notebooks they executed."""
    import os
    from pathlib import Path

    out = {}
    for folder in [Path(p) for p in os.environ.get("MLPL_LAB_REPORTS", "").split(os.pathsep) if p]:
        logs = {n: _read_log(folder / n.replace(".ipynb", ".figures.jsonl"))
                for n in NOTEBOOKS if (folder / n).exists()}
        if logs:
            out[str(folder)] = logs
    return out


@pytest.mark.notebook
def test_no_figure_of_the_smoke_series_has_overlapping_tick_labels_or_a_method_off_its_colour(executed_notebooks):
    check_figure_logs({name: _figure_log(executed_notebooks, name) for name in NOTEBOOKS})


@pytest.mark.reports
def test_no_figure_of_a_given_report_has_colliding_labels_or_a_method_off_its_colour():
    """The same checks on the reports ``$MLPL_LAB_REPORTS`` names (CI: the smoke series and the
    pack-served cpu report, whose wider grids the smoke series does not draw: 07's heatmap columns
    collided there only)."""
    given = given_report_logs()
    if not given:
        pytest.skip("no report given: set MLPL_LAB_REPORTS to folders `mlpl-lab report` wrote")
    for folder, logs in given.items():
        assert any(logs.values()), f"{folder}: no figure logs (<stem>.figures.jsonl): a report older than its log?"
        check_figure_logs(logs, where=folder)


def check_figure_logs(logs, where="the smoke series"):
    seen, overlaps, off, snake, errors = {}, [], [], [], []
    total = 0
    for name, entries in logs.items():
        for entry in entries:
            total += 1
            if "error" in entry:
                errors.append((name, entry))
                continue
            overlaps += [(name, entry["cell"], o["axes"], o["labels"]) for o in entry["overlaps"]]
            for label, colour in entry["legend"].items():
                expected = method_colour(label)
                if expected is None:
                    continue
                method = method_label(label)
                seen.setdefault(method, set()).add(name)
                # a second label of the same method in one figure takes a spare colour (palette)
                same = [c for k, c in entry["legend"].items() if method_label(k) == method]
                if expected not in same:
                    off.append((name, entry["cell"], label, colour, expected))
            for ax in entry["axes"]:
                for text in (ax["xlabel"], ax["ylabel"]):
                    if re.fullmatch(r"[A-Za-z]+(_[A-Za-z0-9.]+)+", text.strip()):
                        snake.append((name, entry["cell"], text))
    assert total > 20, f"{where}: only {total} figures logged: does setup_notebook register the figure log?"
    assert not errors, (where, errors[:3])
    assert not overlaps, f"{where}: {len(overlaps)} colliding label pairs, e.g. {overlaps[:4]}"
    assert not off, f"{where}: methods drawn off their palette colour: {off[:4]}"
    assert not snake, f"{where}: axis labels that are code names: {snake[:4]}"
    # the same method drawn by two chapters (AN is in most): the check above compared them
    assert any(len(books) >= 2 for books in seen.values()), seen


# --- tables and records ---------------------------------------------------------------------------

class _Tables(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tables, self._stack = [], []

    def handle_starttag(self, tag, attrs):
        if tag == "table":
            self._stack.append({"body_rows": 0, "cols": 0, "cur": 0, "in_body": False})
        elif not self._stack:
            return
        elif tag == "tbody":
            self._stack[-1]["in_body"] = True
        elif tag == "tr":
            t = self._stack[-1]
            t["cur"] = 0
            t["body_rows"] += t["in_body"]
        elif tag in ("td", "th"):
            t = self._stack[-1]
            t["cur"] += int(dict(attrs).get("colspan") or 1)
            t["cols"] = max(t["cols"], t["cur"])

    def handle_endtag(self, tag):
        if tag == "table" and self._stack:
            self.tables.append(self._stack.pop())


def table_sizes(html: str):
    parser = _Tables()
    parser.feed(html)
    return [(t["body_rows"], t["cols"]) for t in parser.tables]


def assert_fits(styler_or_html, what):
    html = styler_or_html if isinstance(styler_or_html, str) else styler_or_html.to_html()
    sizes = table_sizes(html)
    assert sizes, f"{what}: no table"
    for rows, cols in sizes:
        # the columns counted include the row labels (one per index level)
        assert rows <= MAX_ROWS and cols <= MAX_COLUMNS + 2, f"{what}: {rows} rows × {cols} columns"


def test_the_views_that_were_walls_fit_at_the_cpu_size():
    """The tables issue 48 found too long or wide under cpu, built at that size."""
    from mlpl_lab.chapters import benchmark, cls, gr, lac, opml
    from mlpl_lab.profiles import get_profile

    epochs = get_profile("cpu").epochs
    assert epochs > MAX_ROWS  # else this test proves nothing
    assert_fits(gr.schedule_view(epochs), "02 schedule")
    record = {f"M{i}": {"trials": [{"params": {"q": k}, "val_mAP": 50.0 + k} for k in range(3)], "chosen": 1}
              for i in range(8)}
    assert_fits(gr.tuning_view(record), "02 tuning")
    index = pd.Index(range(1, epochs + 1), name="epoch")
    trace = pd.DataFrame({k: np.linspace(0, 1, epochs) for k in ("disagree_fraction", "branch_empty",
                          "branch_disagree", "used_f", "used_g", "val_mAP")}, index=index)
    assert_fits(cls.trace_view(trace), "04 Co-teaching+ trace")
    log = pd.DataFrame({"train_ap_mean": np.linspace(0, 1, epochs), "corrected": np.arange(epochs),
                        "corrected_total": np.cumsum(np.arange(epochs)), "true share": 0.5}, index=index)
    assert_fits(opml.correction_view(log), "03 correction log")
    cols = pd.Index(range(1, 58), name="epoch")
    rows = pd.MultiIndex.from_product([["LAC", "two-stage"], ["lac_an_ratio", "lac_contrast_pairs"]],
                                      names=["run", "quantity"])
    ratio = pd.DataFrame(np.ones((4, 57)), index=rows, columns=cols)
    assert_fits(lac.ratio_view(ratio), "05 ratio per epoch")
    assert_fits(benchmark.rows_view(), "07 rows")


def test_a_long_record_reads_as_a_summary_and_a_big_one_as_a_compact_table():
    from mlpl_lab.reporting.report import readable

    line = readable("temperature_mean", {str(e): 0.3 + e / 200 for e in range(1, 129)})
    assert set(line) == {"text/plain"} and len(line["text/plain"]) < 200
    assert line["text/plain"].startswith("temperature mean: 128 values")
    table = readable("per_class", {f"class {i}": {f"c{j}": float(i * j) for j in range(30)} for i in range(40)})
    assert_fits(table["text/html"], "a 40 × 30 record")
    assert readable("GR_minus_AN", 2.5)["text/plain"] == "GR minus AN: 2.50"


def test_headers_read_in_words():
    assert header_words("share_below_0.1") == "share below 0.1"
    assert header_words("peak_memory_mib") == "peak memory (MiB)"
    assert header_words("val_mAP") == "validation mAP (%)"
    assert header_words("R_h") == "R_h" and header_words("best epoch") == "best epoch"
    from mlpl_lab.analysis.display import styled

    html = styled(pd.DataFrame({"share_below_0.1": [0.5], "peak_memory_mib": [12.0]}), "x").to_html()
    assert "share below 0.1" in html and "peak memory (MiB)" in html and "share_below" not in html


def test_a_hidden_record_has_no_visible_output_and_is_still_read(tmp_path):
    import nbformat

    from mlpl_lab.reporting.report import RECORD_MIME, read_records, strip_records

    nb = nbformat.v4.new_notebook()
    cell = nbformat.v4.new_code_cell("")
    cell.outputs = [nbformat.v4.new_output("display_data", data={RECORD_MIME: {"name": "a", "value": 1}}),
                    nbformat.v4.new_output("display_data", data={RECORD_MIME: {"name": "b", "value": 2},
                                                                 "text/plain": "b: 2"})]
    nb.cells = [cell]
    path = tmp_path / "x.ipynb"
    nbformat.write(nb, str(path))
    assert read_records(path) == {"a": 1, "b": 2}
    assert strip_records(nb) == 1 and len(nb.cells[0].outputs) == 1  # the shown one stays


@pytest.mark.notebook
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_no_table_over_the_limits_and_no_empty_output_in_the_smoke_series(executed_notebooks, name):
    executed_notebooks(name)
    nb = json.loads((executed_notebooks.out / name).read_text())
    empty = 0
    for i, cell in enumerate(nb["cells"]):
        for out in cell.get("outputs", []):
            data = out.get("data", {})
            if "text/html" in data:
                html = "".join(data["text/html"]) if isinstance(data["text/html"], list) else data["text/html"]
                if "<table" in html:
                    assert_fits(html, f"{name} cell {i}")
            plain = data.get("text/plain")
            if plain is not None and not "".join(plain).strip() and len(data) > 0:
                empty += 1
    assert empty == 0, f"{name}: {empty} outputs with an empty text/plain"
    page = (executed_notebooks.out / name.replace(".ipynb", ".html")).read_text()
    assert "<pre></pre>" not in page, f"{name}: an empty output area in the HTML report"


def test_a_record_table_prints_integer_columns_as_integers():
    """Bug caught: 07's tuned table printed an epoch count as "10.00" (its missing cells made the
    column float); reals keep their decimals."""
    from mlpl_lab.reporting.report import readable

    shown = readable("tuned", {"a": {"T_k": 10, "lr": 1.0}, "b": {"lr": 30.0}})
    rows = {line.split()[0]: line.split()[1:] for line in shown["text/plain"].splitlines()[2:]}
    assert rows["a"] == ["10", "1.00"] and rows["b"] == ["—", "30.00"], shown["text/plain"]


def test_the_profile_reads_as_a_table_of_settings_not_a_repr():
    """Bug caught: 01 printed the profile's dataclass repr. Every field appears once, by its name
    in words, in a table within the size limits."""
    import dataclasses

    from mlpl_lab.protocol.common import profile_frame
    from mlpl_lab.profiles import get_profile

    P = get_profile("cpu")
    frame = profile_frame(P)
    text = " ; ".join(frame["settings"])
    assert "Profile(" not in text and frame.shape[0] <= MAX_ROWS and frame.shape[1] <= MAX_COLUMNS
    for f in dataclasses.fields(P):
        if f.name != "name":
            assert text.count(f"{header_words(f.name)} = ") >= 1, f.name
    assert "epochs = 54" in text and "seeds = 0, 1, 2, 3, 4" in text
