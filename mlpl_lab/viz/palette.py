"""One colour per method, in every figure of every chapter.

:data:`METHOD_COLOURS` gives each registered method (:data:`mlpl_lab.methods.METHODS`) its colour,
under the label the chapters show it by (AN, GR, CLS, ...); :data:`LABELS` maps each registry
name and each chapter's own label of a method ("two-stage + queue (LAC)", "JoCoR (λ=0.1)",
"full labels (oracle)") to that label. The key methods of the benchmark get the strong colours
(the oracle dark grey, AN blue, GR green, OPML-SP light purple, CLS orange, LAC red, PU-MLC dark violet); the
variants a chapter compares with them get shades of their family's hue, distinct from one another.

:func:`method_colour` answers for one label; :func:`colours_for` for the labels of one figure:
a label that names no method (a τ value, "seconds") gets one of :data:`SPARE` not used in that
figure, so a figure's colours are always distinct."""
from __future__ import annotations

import re
from typing import Dict, Iterable, List, Optional

#: label of a method -> colour (hex); every registry name reaches one through :data:`LABELS`
METHOD_COLOURS: Dict[str, str] = {
    # the oracle and assume-negative (chapters 00-01, the reference rows of every chapter)
    "full labels": "#3d3d3d",
    "AN": "#1f77b4",
    # chapter 02's zoo: each a hue of its own; GR green, its ablation rows shades of green
    "WAN": "#c6dbef",
    "AN-LS": "#17becf",
    "EPR": "#bcbd22",
    "ROLE": "#dbdb8d",
    "Focal": "#ad494a",
    "ASL": "#e7969c",
    "Hill": "#8c6d31",
    "SPLC": "#e7ba52",
    "EM": "#e377c2",
    "EM+APL": "#f7b6d2",
    "EN": "#7f7f7f",
    "LL-R": "#393b79",
    "LL-Ct": "#6b6ecf",
    "LL-Cp": "#9c9ede",
    # BoostLU on the three Large Loss schemes: the LL hues, deeper and more violet
    "LL-R + BoostLU": "#003366",
    "LL-Ct + BoostLU": "#7733dd",
    "LL-Cp + BoostLU": "#aa77ff",
    "GR": "#2ca02c",
    "GR, no component": "#c7e9c0",
    "k̂": "#98df8a",
    "v": "#637939",
    "L": "#9edae5",
    "k̂+v": "#b5cf6b",
    "k̂+L": "#74c476",
    "v+L": "#006d2c",
    "GR as EN": "#cedb9c",
    "GR as EM": "#a1d99b",
    "GR as Hill": "#8ca252",
    "GR as SPLC": "#00441b",
    "GR as SPLC (code)": "#41ab5d",
    # chapter 03: OPML in purples
    "ZLPR": "#c5b0d5",
    "OPML": "#a55194",
    "OPML+HR": "#5254a3",
    "OPML+HR+LS": "#f768a1",
    "OPML+HR+LC": "#e7298a",
    "OPML-SP": "#9467bd",
    # chapter 04: CLS orange, its ablations light oranges, the Co-teaching family browns and mustard
    "CLS": "#ff7f0e",
    "CLS-H": "#fdae6b",
    "CLS-L": "#e6550d",
    "Co-teaching": "#543005",
    "Co-teaching+": "#bf812d",
    "JoCoR": "#e6ab02",
    "CLC": "#fdd49e",
    # chapter 05: LAC red, its stages pinks and dark reds
    "LAC": "#d62728",
    "AN (LAC head)": "#6baed6",
    "+PLC": "#ff9896",
    "+LAC end-to-end": "#7f2704",
    "two-stage": "#67001f",
    "PLC, E1+E2 epochs (control)": "#fdd0a2",
    "LAC, the code's stage-2 start": "#a50f15",
    # chapter 06: PU-MLC dark violet, its steps browns and pinks, partial BCE teal
    "PU-MLC": "#6a3d9a",
    "vPU": "#d9a066",
    "+γ": "#b07aa1",
    "+γ+α": "#ff9da7",
    "PU-MLC + LgConv": "#9c755f",
    "partial BCE": "#0b7285",
    "partial BCE, missed → unknown": "#66c2a5",
}

#: every other name of a method -> its label in :data:`METHOD_COLOURS`: the registry's names and
#: the chapters' own labels for the same method
LABELS: Dict[str, str] = {
    # registry names (mlpl_lab.methods.METHODS)
    "full": "full labels", "an": "AN", "wan": "WAN", "an_ls": "AN-LS", "epr": "EPR", "role": "ROLE",
    "focal": "Focal", "asl": "ASL", "hill": "Hill", "splc": "SPLC", "em": "EM", "em_apl": "EM+APL",
    "ll_r": "LL-R", "ll_ct": "LL-Ct", "ll_cp": "LL-Cp", "gr": "GR", "gr_all": "GR",
    "gr_none": "GR, no component", "gr_k_only": "k̂", "gr_v_only": "v", "gr_robust_only": "L",
    "gr_k_v": "k̂+v", "gr_k_robust": "k̂+L", "gr_v_robust": "v+L", "gr_as_en": "GR as EN",
    "gr_as_em": "GR as EM", "gr_as_hill": "GR as Hill", "gr_as_splc": "GR as SPLC",
    "gr_as_splc_code": "GR as SPLC (code)", "zlpr": "ZLPR", "opml": "OPML", "opml_sp": "OPML-SP",
    "clc": "CLC", "en": "EN",
    "cls": "CLS", "cls_h": "CLS-H", "cls_l": "CLS-L", "coteaching": "Co-teaching",
    "coteaching_plus": "Co-teaching+", "jocor": "JoCoR", "lac": "LAC", "lac_an": "AN (LAC head)",
    "lac_plc": "+PLC", "lac_end_to_end": "+LAC end-to-end", "lac_no_queue": "two-stage",
    "pu_mlc": "PU-MLC", "vpu_plain": "vPU", "pu_mlc_gamma": "+γ", "pu_mlc_gamma_alpha": "+γ+α",
    "partial_bce": "partial BCE",
    # the chapters' labels of the same methods
    "BCE (full)": "full labels", "full labels (oracle)": "full labels", "oracle": "full labels",
    "BCE (AN)": "AN", "AN (PU labels)": "AN", "AN (all off)": "AN", "GR (all on)": "GR",
    "ZLPR (a=b=0)": "ZLPR", "two-stage + queue (LAC)": "LAC", "PU-MLC (+mixup)": "PU-MLC",
    "partial BCE (+negatives)": "partial BCE",
}

#: colours for labels that name no method, in the order a figure takes them (Okabe-Ito and greys)
SPARE = ("#56b4e9", "#e69f00", "#009e73", "#0072b2", "#cc79a7", "#f0e442", "#000000", "#999999",
         "#d55e00", "#666666", "#bbbbbb", "#4d4d4d")

_SUFFIX = re.compile(r"\s*(\(.*\)|·.*|,.*| [a-z]=.*)$")


def method_label(name: str) -> Optional[str]:
    """The label of :data:`METHOD_COLOURS` that ``name`` names, or None. ``name`` may be a
    registry name, a chapter's label, or either followed by a detail: ``"JoCoR (λ=0.1)"``,
    ``"AN · train"``, ``"OPML a=0, b=0"``, ``"OPML (full)"`` (full labels: the same method)."""
    text = str(name).strip()
    for candidate in (text, text.lower()):
        if candidate in METHOD_COLOURS:
            return candidate
        if candidate in LABELS:
            return LABELS[candidate]
    stripped = _SUFFIX.sub("", text)
    if stripped and stripped != text:
        return method_label(stripped)
    return None


def method_colour(name: str) -> Optional[str]:
    """The colour of the method ``name`` names (:func:`method_label`), or None for other labels."""
    label = method_label(name)
    return METHOD_COLOURS[label] if label is not None else None


def colours_for(names: Iterable[str]) -> Dict[str, str]:
    """``{name: colour}`` for the labels of one figure: each method its own colour, the other
    labels :data:`SPARE` colours in order, none of them already used in this figure. Two labels
    that name the same method (a figure comparing a method with itself under two settings) keep
    the method's colour for the first and a spare one for the next."""
    names = list(dict.fromkeys(names))
    out: Dict[str, str] = {}
    for n in names:
        c = method_colour(n)
        if c is not None and c not in out.values():
            out[n] = c
    spare = iter([c for c in SPARE if c not in out.values()])
    for n in names:
        if n not in out:
            out[n] = next(spare, "#7f7f7f")
    return out


def colour_list(names: Iterable[str]) -> List[str]:
    """:func:`colours_for` as a list in the order of ``names``."""
    names = list(names)
    mapping = colours_for(names)
    return [mapping[n] for n in names]
