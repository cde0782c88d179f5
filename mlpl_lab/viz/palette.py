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

from .. import catalogue

#: label of a method -> colour (hex), from the method catalogue (:mod:`mlpl_lab.catalogue`);
#: every registry name reaches one through :data:`LABELS`
METHOD_COLOURS: Dict[str, str] = catalogue.colours()

#: every other name of a method -> its label in :data:`METHOD_COLOURS`: the registry's names and
#: the chapters' own labels for the same method (the catalogue's aliases)
LABELS: Dict[str, str] = catalogue.name_labels()

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
