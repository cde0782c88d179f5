"""The instructor guide's expected results: per chapter the few figures a class sees, each with
the value its table shows and the range its seeds span, read from the records of executed
notebooks (never typed), and a small range plot per chapter.

A figure (:class:`Figure`) names, in words, what the class reads ("GR's test mAP under single
positive"), the record and keys its table value sits under, and where the per-seed values behind
that mean were recorded: one side (``a`` or ``b``) or the paired differences (``diffs``) of a
claim of the chapter's claims table (:func:`mlpl_lab.analysis.claims.claims_record`). A figure
measured on the data alone (chapter 00) has no seeds. ``mlpl-lab course ranges --executed DIR``
stores what the executed notebooks of ``DIR`` show in ``notebooks/expected_ranges.json``; the
book merges it with the profile it is built from.
"""
from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from .notebooks import RANGES_FILE, chapter_notebooks
from ..catalogue import LABEL


@dataclass(frozen=True)
class Figure:
    """One figure of a chapter: ``label`` in words, ``record`` and ``keys`` of the value its table
    shows, ``unit`` ("mAP points", "%" for a share the record holds as a fraction, "" for a
    count), and the per-seed values behind it: ``claim`` (the key of the claim in the chapter's
    ``claims`` record, its stable identifier) and ``side`` ("a", "b" or "diffs")."""

    label: str
    record: str
    keys: Tuple[str, ...] = ()
    unit: str = "mAP points"
    claim: Optional[str] = None
    side: str = "a"


SP, D50 = "single positive", "drop 50 %"
#: the figures the guide shows per chapter (what each chapter's tables lead with)
FIGURES: Dict[str, List[Figure]] = {
    "00_partial_labels": [
        Figure("share of the positives hidden under single positive", "hidden_positive_share", (SP,), "%"),
        Figure("AN's false-negative rate under single positive", "an_false_negative_rate", (SP,), "%"),
        Figure("AN's false-negative rate under known 10 %", "an_false_negative_rate", ("known 10 %",), "%")],
    "01_assume_negative": [
        Figure("AN's test mAP under single positive", "mAP", (SP, LABEL.an),
               claim="oracle_beats_an/single", side="b"),
        Figure("full labels' test mAP (the oracle)", "mAP", (SP, LABEL.oracle),
               claim="oracle_beats_an/single", side="a"),
        Figure("the gap AN leaves under single positive", "gap", (SP,),
               claim="oracle_beats_an/single", side="diffs")],
    "02_gr_loss": [
        Figure("GR's test mAP under single positive", "mAP", (LABEL.gr,), claim="gr_beats_an"),
        Figure("AN's test mAP under single positive", "mAP", (LABEL.an,), claim="gr_beats_an",
               side="b"),
        Figure("EM's test mAP under single positive", "mAP", (LABEL.em,),
               claim="gr_beats_best_other", side="b"),
        Figure("GR − AN", "GR_minus_AN", (), claim="gr_beats_an", side="diffs")],
    "03_opml": [
        Figure("OPML-SP's test mAP under single positive", "mAP", (LABEL.opml_sp,),
               claim="opml_sp_beats_an"),
        Figure("OPML's test mAP under single positive", "mAP", (LABEL.opml,), claim="opml_beats_an"),
        Figure("AN's test mAP under single positive", "mAP", (LABEL.an,), claim="opml_beats_an",
               side="b")],
    "04_cls": [
        Figure("CLS's test mAP under single positive", "mAP", (SP, LABEL.cls), claim="cls_beats_an/single"),
        Figure("AN's test mAP under single positive", "mAP", (SP, LABEL.an), claim="cls_beats_an/single",
               side="b"),
        Figure("CLS's test mAP under drop 50 %", "mAP", (D50, LABEL.cls), claim="cls_beats_an/drop50")],
    "05_lac": [
        Figure("LAC's test mAP (two stages and the queue)", "mAP", (LABEL.lac_row,),
               claim="lac_beats_equal_epochs"),
        Figure("PLC trained as long (the control)", "mAP", (LABEL.lac_control,),
               claim="lac_beats_equal_epochs", side="b"),
        Figure("AN's test mAP with LAC's label-query head", "mAP", (LABEL.an,), claim="plc_beats_an", side="b")],
    "06_pu_mlc": [
        Figure("PU-MLC's test mAP at p = 0.1", "mAP", ("p=0.1", LABEL.pu_mlc_row),
               claim="pu_mlc_beats_partial_bce/p0.1"),
        Figure("partial BCE's test mAP at p = 0.1", "mAP", ("p=0.1", LABEL.partial_bce_row),
               claim="pu_mlc_beats_partial_bce/p0.1", side="b"),
        Figure("PU-MLC's test mAP at p = 0.5", "mAP", ("p=0.5", LABEL.pu_mlc_row),
               claim="pu_mlc_beats_partial_bce/p0.5")],
    "07_benchmark": [
        Figure("GR's test mAP under single positive", "mAP", (LABEL.gr, SP), claim="beats_an/gr/single"),
        Figure("LAC's test mAP under single positive", "mAP", (LABEL.lac, SP), claim="beats_an/lac/single"),
        Figure("AN's test mAP under single positive", "mAP", (LABEL.an, SP), claim="beats_an/gr/single",
               side="b"),
        Figure("EM's mean rank over the regimes (1 is best)", "mean_rank", (LABEL.em,), unit="")],
    "08_side_information": [
        Figure(f"{LABEL.crisp}'s test mAP under single positive", "mAP", (LABEL.crisp,),
               claim="beats_an/crisp/single"),
        Figure("AN's test mAP under single positive", "mAP", (LABEL.an,), claim="beats_an/crisp/single",
               side="b"),
        Figure(f"{LABEL.cardinality_per_image}'s test mAP under single positive", "mAP",
               (LABEL.cardinality_per_image,), claim="beats_an/cardinality_per_image/single")],
}


def _at(value: Any, keys: Sequence[str]) -> Any:
    for k in keys:
        value = value.get(k) if isinstance(value, Mapping) else None
    return value


def _finite(x: Any) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def figure_values(fig: Figure, records: Mapping[str, Any]) -> Optional[Dict[str, Any]]:
    """``{"value", "low", "high", "seeds", "unit"}`` of ``fig`` in one notebook's records (a
    share as a percentage), or None when its record is missing. ``low``/``high`` are the smallest
    and largest per-seed value (absent where the figure has no seeds or the claim is missing);
    ``difference`` marks a paired difference (plotted apart from the levels)."""
    value = _at(records.get(fig.record), fig.keys)
    if not _finite(value):
        return None
    scale = 100.0 if fig.unit == "%" else 1.0
    out: Dict[str, Any] = {"value": round(value * scale, 4), "unit": fig.unit}
    claim = (records.get("claims") or {}).get(fig.claim) if fig.claim else None
    if isinstance(claim, Mapping):
        seeds = [int(s) for s in claim.get("seeds", [])]
        per_seed = claim.get("diffs") if fig.side == "diffs" else \
            [(claim.get(fig.side) or {}).get(str(s)) for s in seeds]
        per_seed = [float(v) for v in (per_seed or []) if _finite(v)]
        if per_seed and len(per_seed) == len(seeds):
            out |= {"low": round(min(per_seed) * scale, 4), "high": round(max(per_seed) * scale, 4),
                    "seeds": seeds}
            if fig.side == "diffs":
                out["difference"] = True
    return out


def base_profile(profile: str) -> str:
    """A pack-served series shows the results of the series it was packed from: ``cpu-pack`` is ``cpu``."""
    from .syllabus import PACK_SUFFIX

    return profile[: -len(PACK_SUFFIX)] if profile.endswith(PACK_SUFFIX) else profile


def expected_ranges(executed_dirs: Dict[str, Path]) -> Dict[str, Dict[str, Dict[str, Dict[str, Any]]]]:
    """``{notebook: {figure label: {profile: figure_values}}}`` read from executed notebooks'
    records, one folder per profile."""
    from ..reporting.report import read_records

    out: Dict[str, Dict[str, Dict[str, Dict[str, Any]]]] = {}
    for profile, folder in executed_dirs.items():
        for path in chapter_notebooks(folder):
            records = read_records(path)
            for fig in FIGURES.get(path.stem, []):
                found = figure_values(fig, records)
                if found is not None:
                    out.setdefault(path.stem, {}).setdefault(fig.label, {})[base_profile(profile)] = found
    return out


def load_ranges(path: Path = RANGES_FILE) -> Dict[str, Dict[str, Dict[str, Dict[str, Any]]]]:
    """The stored expected results (``{notebook: {label: {profile: values}}}``), or {}. A file in
    an older layout (values as text) reads as empty: store it again with ``mlpl-lab course ranges``."""
    data = json.loads(Path(path).read_text()) if Path(path).exists() else {}
    ok = all(isinstance(v, Mapping) for rows in data.values() for per in rows.values() for v in per.values())
    return data if ok else {}


def merge_ranges(*parts):
    """Later parts win per notebook, figure and profile."""
    out: Dict[str, Dict[str, Dict[str, Any]]] = {}
    for part in parts:
        for stem, rows in part.items():
            for key, values in rows.items():
                out.setdefault(stem, {}).setdefault(key, {}).update(values)
    return out


def _num(x: float, unit: str) -> str:
    return f"{x:.1f}" if unit else f"{x:.3g}"


def in_words(label: str, v: Mapping[str, Any]) -> str:
    """"GR's test mAP under single positive: 80.9 mAP points (seeds 1–5 from 80.5 to 81.9)"."""
    unit = v.get("unit", "")
    text = f"{label}: **{_num(v['value'], unit)}**" + (f" {unit}" if unit and unit != "%" else unit)
    if "low" in v:
        seeds = v.get("seeds") or []
        said = f"seeds {seeds[0]}–{seeds[-1]}" if seeds == list(range(seeds[0], seeds[-1] + 1)) and len(seeds) > 2 \
            else "seeds " + ", ".join(map(str, seeds))
        text += f" ({said}: {_num(v['low'], unit)} to {_num(v['high'], unit)})"
    elif unit == "%":
        text += " (counted on the labels, no training)"
    return text


def range_plot(rows: Mapping[str, Mapping[str, Mapping[str, Any]]], profiles: Sequence[str], path: Path) -> Path:
    """One chapter's figures measured over seeds as a small range plot, one panel per profile and
    unit, its figures on one shared scale (so their spreads compare): per figure a bar from the
    lowest to the highest seed and a dot at the value the table shows."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    units: Dict[Tuple[str, str], List[Tuple[str, str, Mapping[str, Any]]]] = {}
    for p in profiles:
        for label, per in rows.items():
            if "low" in per.get(p, {}):
                unit = per[p].get("unit", "") + (" (a paired difference)" if per[p].get("difference") else "")
                units.setdefault((p, unit), []).append((label, p, per[p]))
    n = sum(len(v) for v in units.values())
    fig, axes = plt.subplots(len(units), 1, figsize=(6.4, 0.6 + 0.32 * n + 0.6 * len(units)), squeeze=False,
                             gridspec_kw={"height_ratios": [len(v) for v in units.values()]})
    colours = dict(zip(profiles, ["#345995", "#e26d5a", "#3a7d44"]))
    for ax, ((profile, unit), items) in zip(axes[:, 0], units.items()):
        for y, (label, p, v) in enumerate(reversed(items)):
            ax.plot([v["low"], v["high"]], [y, y], color=colours.get(p, "grey"), lw=6, alpha=0.4,
                    solid_capstyle="butt")
            ax.plot([v["value"]], [y], "o", color=colours.get(p, "grey"), ms=5)
        ax.set_yticks(range(len(items)), [label for label, _, _ in reversed(items)], fontsize=7)
        ax.set_ylim(-0.6, len(items) - 0.4)
        ax.set_xlabel((unit or "value") + (f", {profile} profile" if len(units) > 1 else ""), fontsize=7)
        ax.tick_params(axis="x", labelsize=7)
        ax.margins(x=0.06)
        ax.grid(axis="x", alpha=0.3)
    axes[0, 0].set_title("dot: the value the table shows; bar: lowest to highest seed", fontsize=7, loc="left")
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=90, bbox_inches="tight", metadata={"Software": None})
    plt.close(fig)
    return path


def ranges_markdown(ranges, profiles: Sequence[str], plots: Optional[Path] = None,
                    titles: Optional[Mapping[str, str]] = None) -> str:
    """The guide's section: per chapter (headed by its title in ``titles``) its figures in words
    (one line per profile that measured them) and, with ``plots`` (a folder next to the page),
    its range plot."""
    if not ranges:
        return "_No executed notebooks were found when this page was built: run `make report` first._"
    out: List[str] = []
    order = [s for s in FIGURES if s in ranges] + [s for s in ranges if s not in FIGURES]
    for stem in order:
        rows = ranges[stem]
        shown = [p for p in profiles if any(p in v for v in rows.values())]
        if not shown:
            continue
        out += [f"### {(titles or {}).get(stem, stem)}", ""]
        known = [f.label for f in FIGURES.get(stem, [])]
        rows = {k: rows[k] for k in sorted(rows, key=lambda k: known.index(k) if k in known else len(known))}
        for label, per in rows.items():
            for p in shown:
                if p in per:
                    out.append(f"* {in_words(label, per[p])}" + (f" — {p}" if len(shown) > 1 else ""))
        out.append("")
        if plots is not None and any("low" in v for per in rows.values() for v in per.values()):
            name = f"expected_{stem}.png"
            range_plot(rows, shown, Path(plots) / name)
            out += [f"![The figures of {stem[:2]}: the value each table shows and the range its seeds span]"
                    f"({Path(plots).name}/{name})", ""]
    return "\n".join(out)
