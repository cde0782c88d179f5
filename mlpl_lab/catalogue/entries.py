"""The catalogue's entries: one per method row the lab shows, and the lookups every chapter reads.

An :class:`Entry` holds what the lab says about one row: its display ``label`` (this module is the
only place in :mod:`mlpl_lab` a label is written out), the registered method and the fixed
hyperparameters its spec carries, its family, the chapters that show it, its equal-budget tuning
grid, its colour in every figure, the work it cites, and its paper's claim against AN. Whether
the row is schedule-bound is the method registry's flag (:attr:`Entry.schedule_bound`).

Other modules name a row by its entry's key, never by retyping the label: ``LABEL.gr`` is
``"GR"``, ``LABEL.opml_sp`` is ``"OPML-SP"``. An entry with ``alias_of`` is a chapter's own label
for another entry's method ("two-stage + queue (LAC)" is LAC, "BCE (full)" the oracle): it takes
that entry's colour. ``also`` lists other names that resolve to the entry (registered names of
the same method, the bare name a label qualifies) without being labels a chapter shows.

A label that is also a paper's short name (CLS, LAC, Co-teaching, ...) is read from the
bibliography, and the oracle's from the regime it trains under, so that each stays written once.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import Any, Dict, List, Mapping, Optional, Tuple

from ..core.bibliography import aliases as _work_aliases
from ..core.bibliography import cite, work
from ..core.regime_table import FULL_LABELS

__all__ = ["Entry", "ENTRIES", "LABEL", "entry", "by_label", "in_chapter", "grids", "colours",
           "name_labels", "paper_claims", "citation_aliases", "all_entries", "register", "unregister"]


@dataclass(frozen=True)
class Entry:
    """One method row: see the module docstring for each field."""

    key: str                       # a Python identifier: ``LABEL.<key>`` is the label
    label: str
    method: str                    # the registered method (:data:`mlpl_lab.methods.METHODS`)
    family: str
    chapters: Tuple[str, ...]      # the notebooks that show this row ("02", "07", ...)
    #: hyperparameters every spec of this row carries (chapters add their design's on top)
    params: Mapping[str, Any] = field(default_factory=dict)
    colour: Optional[str] = None   # hex; None for an alias (it takes its method's)
    grid: Optional[Mapping[str, List[Any]]] = None  # tuning grid, paper default first
    bib: Optional[str] = None      # key of :data:`mlpl_lab.core.bibliography.WORKS`
    claim: Optional[str] = None    # its paper's claim against AN (07's claims table)
    claim_rank: int = 100          # the claims table's order (lower first; ties: catalogue order)
    alias_of: Optional[str] = None
    also: Tuple[str, ...] = ()
    #: the chapter that introduces the method, when it is not the first of ``chapters``
    home: Optional[str] = None

    @property
    def chapter(self) -> str:
        """The chapter that introduces the method (07's methods table shows it)."""
        return self.home or (self.chapters[0] if self.chapters else "")

    @property
    def schedule_bound(self) -> bool:
        """Whether this row's runs are schedule-bound (the registry's flag, one source of truth)."""
        from ..methods.registry import is_schedule_bound  # the registry imports torch; labels do not

        return is_schedule_bound(self.method, self.params)


def _paper(key: str) -> str:
    """The short name of work ``key``: a method named as its paper."""
    return work(key).short


_LL_GRID = {"delta_rel": [0.002, 0.001, 0.004]}
_FORGET_GRID = {"forget_rate": [0.2, 0.1, 0.3]}
_OPML_GRID = {"a": [0.0, 1.0, 2.0], "b": [0.0, -1.0]}
_EM_GRID = {"alpha": [0.2, 0.1, 0.4]}
#: JoCoR is always quoted with its λ (the official code's default)
_JOCOR_LAMBDA = 0.1
_BOOSTLU = "BoostLU"
_E = Entry

ENTRIES: Tuple[Entry, ...] = (
    # the oracle and assume-negative: the reference rows of every chapter; the benchmark's rows first,
    # in its order
    _E("oracle", FULL_LABELS, "full", "reference", ("01", "02", "07"), colour="#3d3d3d",
       also=("oracle",)),
    _E("an", "AN", "an", "reference", ("01", "02", "03", "04", "05", "07"), colour="#1f77b4"),
    # chapter 02's zoo: each a hue of its own; GR green
    _E("wan", "WAN", "wan", "zoo", ("02", "07"), colour="#c6dbef"),
    _E("an_ls", "AN-LS", "an_ls", "zoo", ("02", "07"), colour="#17becf", grid={"ls_coef": [0.1, 0.05, 0.2]}),
    _E("epr", "EPR", "epr", "zoo", ("02", "07"), colour="#bcbd22", bib="cole"),
    _E("role", "ROLE", "role", "zoo", ("02", "07"), colour="#dbdb8d", grid={"lr_mult": [10.0, 1.0, 30.0]},
       bib="cole", claim=f"{cite('cole')}, Table 2: beats AN (single positive)", claim_rank=7),
    _E("focal", "Focal", "focal", "zoo", ("07",), home="02", colour="#ad494a", bib="focal"),
    _E("asl", _paper("asl"), "asl", "zoo", ("07",), home="02", colour="#e7969c", bib="asl"),
    _E("hill", "Hill", "hill", "zoo", ("02", "07"), colour="#8c6d31", grid={"lamb": [1.5, 1.0, 2.0]},
       bib="hill"),
    _E("splc", "SPLC", "splc", "zoo", ("02", "07"), colour="#e7ba52", bib="hill"),
    _E("em", "EM", "em", "zoo", ("02", "07"), colour="#e377c2", grid=_EM_GRID, bib="em_apl"),
    _E("em_apl", "EM+APL", "em_apl", "zoo", ("02", "07"), colour="#f7b6d2", grid=_EM_GRID, bib="em_apl",
       claim=f"{cite('em_apl')}: beats AN on four datasets (single positive)", claim_rank=6),
    _E("ll_r", "LL-R", "ll_r", "large loss", ("02", "07"), colour="#393b79", grid=_LL_GRID, bib="large_loss",
       claim=f"{cite('large_loss')}, Table 1: beats AN (single positive)", claim_rank=8),
    _E("ll_ct", "LL-Ct", "ll_ct", "large loss", ("07",), home="02", colour="#6b6ecf", grid=_LL_GRID, bib="large_loss"),
    _E("ll_cp", "LL-Cp", "ll_cp", "large loss", ("07",), home="02", colour="#9c9ede", grid=_LL_GRID, bib="large_loss"),
    # BoostLU on the three Large Loss schemes: the LL hues, deeper and more violet; BoostLU changes the
    # head, not the loss, so each gets its LL row's grid (an equal budget)
    _E("ll_r_boostlu", f"LL-R + {_BOOSTLU}", "ll_r", "large loss", ("07",), home="02", colour="#003366", grid=_LL_GRID,
       bib="boostlu", claim=f"{cite('boostlu')}: boosting improves the Large Loss schemes on three "
                            "single-positive datasets (its abstract), and LL-R beats AN (Large Loss "
                            "Matters, Table 1)", claim_rank=9),
    _E("ll_ct_boostlu", f"LL-Ct + {_BOOSTLU}", "ll_ct", "large loss", ("07",), home="02", colour="#7733dd",
       grid=_LL_GRID, bib="boostlu"),
    _E("ll_cp_boostlu", f"LL-Cp + {_BOOSTLU}", "ll_cp", "large loss", ("07",), home="02", colour="#aa77ff",
       grid=_LL_GRID, bib="boostlu"),
    # GR: the paper's schedule and q2 first, then q2 = 0.05, then the official code's schedule
    _E("gr", "GR", "gr", "GR Loss", ("02", "07"), colour="#2ca02c",
       grid={"schedule": ["paper", "code"], "q2": [0.01, 0.05]}, bib="gr",
       claim=f"{cite('gr')}, Table 2: beats AN on VOC, COCO, NUS, CUB (single positive)", claim_rank=1,
       also=("gr_all",)),
    # chapter 03: OPML in purples (the benchmark's OPML rows at a = b = 0)
    _E("opml", _paper("opml"), "opml", "OPML family", ("03", "07"), params={"a": 0.0, "b": 0.0}, colour="#a55194",
       grid=_OPML_GRID, bib="opml"),
    _E("opml_sp", "OPML-SP", "opml_sp", "OPML family", ("03", "07"), params={"a": 0.0, "b": 0.0}, colour="#9467bd",
       grid=_OPML_GRID, bib="opml",
       claim=f"{cite('opml')}: beats AN on VOC, COCO, NUS, CUB (single positive)", claim_rank=2),
    # chapter 04: CLS orange, the Co-teaching family browns and mustard
    _E("cls", _paper("cls"), "cls", "CLS family", ("04", "07"), colour="#ff7f0e", bib="cls",
       claim=f"{cite('cls')}, Table 2: beats AN on COCO in every regime of its table", claim_rank=3),
    _E("coteaching", _paper("coteaching"), "coteaching", "co-training", ("04", "07"), colour="#543005",
       grid=_FORGET_GRID, bib="coteaching"),
    _E("coteaching_plus", _paper("coteaching_plus"), "coteaching_plus", "co-training", ("04", "07"),
       colour="#bf812d", grid=_FORGET_GRID, bib="coteaching_plus"),
    _E("jocor", _paper("jocor"), "jocor", "co-training", (), colour="#e6ab02", bib="jocor"),
    _E("jocor_row", f"{_paper('jocor')} (λ={_JOCOR_LAMBDA})", "jocor", "co-training", ("04", "07"),
       params={"co_lambda": _JOCOR_LAMBDA}, grid=_FORGET_GRID, bib="jocor", alias_of="jocor"),
    # chapter 05: LAC red, its stages pinks and dark reds
    _E("lac", _paper("lac"), "lac", "LAC stages", ("07",), home="05", colour="#d62728", bib="lac",
       claim=f"{cite('lac')}, Table 2: beats AN on VOC, COCO, NUS, CUB (single positive)", claim_rank=4),
    # chapter 06: PU-MLC dark violet
    _E("pu_mlc", _paper("pu_mlc"), "pu_mlc", "PU learning", ("06", "07"), colour="#6a3d9a",
       grid={"gamma": [0.55, 0.0, 0.25]}, bib="pu_mlc",
       claim=f"— ({cite('pu_mlc')} compares PU-MLC with partial BCE at known proportions, chapter 06; "
             "it makes no claim against AN under these regimes)", claim_rank=5),
    # the chapters' other rows
    _E("en", "EN", "en", "zoo", (), colour="#7f7f7f", bib="em_apl"),
    _E("gr_none", "GR, no component", "gr_none", "GR Loss", (), colour="#c7e9c0", bib="gr"),
    _E("gr_k", "k̂", "gr_k_only", "GR Loss", ("02",), colour="#98df8a", bib="gr"),
    _E("gr_v", "v", "gr_v_only", "GR Loss", ("02",), colour="#637939", bib="gr"),
    _E("gr_l", "L", "gr_robust_only", "GR Loss", ("02",), colour="#9edae5", bib="gr"),
    _E("gr_k_v", "k̂+v", "gr_k_v", "GR Loss", ("02",), colour="#b5cf6b", bib="gr"),
    _E("gr_k_l", "k̂+L", "gr_k_robust", "GR Loss", ("02",), colour="#74c476", bib="gr"),
    _E("gr_v_l", "v+L", "gr_v_robust", "GR Loss", ("02",), colour="#006d2c", bib="gr"),
    _E("gr_as_en", "GR as EN", "gr_as_en", "GR Loss", (), colour="#cedb9c", bib="gr"),
    _E("gr_as_em", "GR as EM", "gr_as_em", "GR Loss", (), colour="#a1d99b", bib="gr"),
    _E("gr_as_hill", "GR as Hill", "gr_as_hill", "GR Loss", (), colour="#8ca252", bib="gr"),
    _E("gr_as_splc", "GR as SPLC", "gr_as_splc", "GR Loss", (), colour="#00441b", bib="gr"),
    _E("gr_as_splc_code", "GR as SPLC (code)", "gr_as_splc_code", "GR Loss", (), colour="#41ab5d", bib="gr"),
    _E("an_all_off", "AN (all off)", "an", "reference", ("02",), alias_of="an"),
    _E("gr_all_on", "GR (all on)", "gr", "GR Loss", ("02",), alias_of="gr"),
    _E("zlpr", "ZLPR", "zlpr", "OPML family", ("03",), colour="#c5b0d5", bib="opml"),
    _E("zlpr_ab0", "ZLPR (a=b=0)", "zlpr", "OPML family", (), alias_of="zlpr"),
    # Table IV's ablation: OPML with the high-rank term, OPML-SP without its correction or its smoothing
    _E("opml_hr", "OPML+HR", "opml", "OPML family", ("03",), params={"high_rank": True}, colour="#5254a3",
       bib="opml"),
    _E("opml_hr_ls", "OPML+HR+LS", "opml_sp", "OPML family", ("03",), params={"correction": False},
       colour="#f768a1", bib="opml"),
    _E("opml_hr_lc", "OPML+HR+LC", "opml_sp", "OPML family", ("03",), params={"smoothing": False},
       colour="#e7298a", bib="opml"),
    _E("bce_full", "BCE (full)", "full", "reference", ("03",), alias_of="oracle"),
    _E("bce_an", "BCE (AN)", "an", "reference", ("03",), alias_of="an"),
    _E("cls_h", "CLS-H", "cls_h", "CLS family", ("04",), colour="#fdae6b", bib="cls"),
    _E("cls_l", "CLS-L", "cls_l", "CLS family", ("04",), colour="#e6550d", bib="cls"),
    _E("clc", "CLC", "clc", "CLS family", ("04",), colour="#fdd49e", bib="cls"),
    _E("lac_an", "AN (LAC's head)", "lac_an", "LAC stages", (), colour="#6baed6", bib="lac"),
    _E("lac_plc", "+PLC", "lac_plc", "LAC stages", ("05",), colour="#ff9896", bib="lac"),
    _E("lac_end_to_end", "+LAC end-to-end", "lac_end_to_end", "LAC stages", ("05",), colour="#7f2704", bib="lac"),
    _E("lac_two_stage", "two-stage", "lac_no_queue", "LAC stages", ("05",), colour="#67001f", bib="lac"),
    _E("lac_row", "two-stage + queue (LAC)", "lac", "LAC stages", ("05",), bib="lac", alias_of="lac"),
    _E("lac_control", "PLC, E1+E2 epochs (control)", "lac_plc", "LAC stages", ("05",), colour="#fdd0a2", bib="lac"),
    _E("lac_code_start", "LAC, the code's stage-2 start", "lac", "LAC stages", ("05",),
       params={"stage2_start": "raw_or_ema"}, colour="#a50f15", bib="lac"),
    _E("an_pu", "AN (PU labels)", "an", "reference", ("06",), alias_of="an"),
    _E("vpu", _paper("vpu"), "vpu_plain", "PU learning", ("06",), colour="#d9a066", bib="vpu"),
    _E("pu_gamma", "+γ", "pu_mlc_gamma", "PU learning", ("06",), colour="#b07aa1", bib="pu_mlc"),
    _E("pu_gamma_alpha", "+γ+α", "pu_mlc_gamma_alpha", "PU learning", ("06",), colour="#ff9da7", bib="pu_mlc"),
    _E("pu_mlc_row", "PU-MLC (+mixup)", "pu_mlc", "PU learning", ("06",), bib="pu_mlc", alias_of="pu_mlc"),
    _E("pu_lgconv", "PU-MLC + LgConv", "pu_mlc", "PU learning", ("06",), params={"lgconv": True},
       colour="#9c755f", bib="pu_mlc"),
    _E("partial_bce", "partial BCE", "partial_bce", "PU learning", ("06",), colour="#0b7285", bib="durand"),
    _E("partial_bce_row", "partial BCE (+negatives)", "partial_bce", "PU learning", ("06",), bib="durand",
       alias_of="partial_bce"),
    _E("partial_bce_missed", "partial BCE, missed → unknown", "partial_bce", "PU learning", ("06",),
       colour="#66c2a5", bib="durand"),
    _E("oracle_row", f"{FULL_LABELS} (oracle)", "full", "reference", ("06",), alias_of="oracle"),
    # side information (class priors, label cardinality): chapter 08's rows; the true-prior and
    # per-image rows are given what the others estimate (ceilings, not methods for partial labels).
    # Crisp (it needs no side information) and the P(k) grain (one statistic of the data set, as
    # cheap as a prior) are rows of 07's benchmark too
    _E("crisp", _paper("crisp"), "crisp", "side information", ("08", "07"), colour="#1b7837", bib="crisp"),
    _E("crisp_true", f"{_paper('crisp')} (true priors)", "crisp", "side information", ("08",),
       params={"priors": "true"}, colour="#5aae61", bib="crisp"),
    _E("cardinality_max", "cardinality (max k)", "cardinality", "side information", ("08",),
       params={"grain": "max"}, colour="#b35806", bib="cardinality"),
    _E("cardinality_distribution", "cardinality (P(k))", "cardinality", "side information", ("08", "07"),
       params={"grain": "distribution"}, colour="#35978f", bib="cardinality"),
    _E("cardinality_per_image", "cardinality (per-image k)", "cardinality", "side information", ("08",),
       params={"grain": "per_image"}, colour="#542788", bib="cardinality"),
)

_BY_KEY: Dict[str, Entry] = {e.key: e for e in ENTRIES}
_BY_LABEL: Dict[str, Entry] = {e.label: e for e in ENTRIES}
if len(_BY_KEY) != len(ENTRIES) or len(_BY_LABEL) != len(ENTRIES):
    raise ValueError("two catalogue entries share a key or a label")
#: entries registered from outside the package (:func:`register`), in the order registered
_REGISTERED: List[Entry] = []

#: ``LABEL.<key>``: each entry's label, the way other modules write a row's name
LABEL = SimpleNamespace(**{e.key: e.label for e in ENTRIES})


def _grid_table() -> Dict[str, Dict[str, List[Any]]]:
    return {e.label: {k: list(v) for k, v in e.grid.items()} for e in all_entries() if e.grid}


def all_entries() -> Tuple[Entry, ...]:
    """:data:`ENTRIES` and the entries registered since (:func:`register`), in that order."""
    return ENTRIES + tuple(_REGISTERED)


def register(new: Entry) -> Entry:
    """Add ``new`` to the catalogue from outside the package (a researcher's method, a test's):
    every lookup below, the tuning grids (:func:`grids`) and ``LABEL.<key>`` then know it, and a
    chapter that reads its rows from the catalogue (07) shows it. Its key and label must be new;
    a row whose method is a registered loss is registered as a one-network method
    (:func:`mlpl_lab.methods.zoo.register_stateless`). Returns the entry."""
    if new.key in _BY_KEY or new.label in _BY_LABEL:
        raise ValueError(f"the catalogue already has an entry with key {new.key!r} or label {new.label!r}")
    if not new.key.isidentifier():
        raise ValueError(f"an entry's key is a Python identifier (LABEL.<key>), got {new.key!r}")
    _REGISTERED.append(new)
    _BY_KEY[new.key], _BY_LABEL[new.label] = new, new
    setattr(LABEL, new.key, new.label)
    if new.grid:
        GRIDS[new.label] = {k: list(v) for k, v in new.grid.items()}
    from ..methods.zoo import register_stateless  # the method registry imports torch; labels do not

    register_stateless([new])
    return new


def unregister(key: str) -> None:
    """Take an entry :func:`register` added out of the catalogue again (an entry of
    :data:`ENTRIES` is refused; an unknown key changes nothing)."""
    if any(e.key == key for e in ENTRIES):
        raise ValueError(f"{key!r} is one of the package's own entries, not a registered one")
    found = _BY_KEY.pop(key, None)
    if found is None:
        return
    _REGISTERED.remove(found)
    _BY_LABEL.pop(found.label, None)
    GRIDS.pop(found.label, None)
    delattr(LABEL, key)


#: ``{label: tuning grid}`` of every entry with one (paper default first), registered ones
#: included: the table the tuning stage reads (:data:`mlpl_lab.protocol.tuning.GRIDS` is this dict)
GRIDS: Dict[str, Dict[str, List[Any]]] = _grid_table()


def entry(key: str) -> Entry:
    """The entry ``key``; an unknown key is an error naming the known ones."""
    if key not in _BY_KEY:
        raise KeyError(f"no catalogue entry {key!r}; known: {', '.join(_BY_KEY)}")
    return _BY_KEY[key]


def by_label(label: str) -> Optional[Entry]:
    """The entry whose label is ``label`` (None if no entry has it)."""
    return _BY_LABEL.get(label)


def in_chapter(chapter: str) -> Tuple[Entry, ...]:
    """The entries notebook ``chapter`` ("07") shows, in catalogue order (registered ones last)."""
    return tuple(e for e in all_entries() if chapter in e.chapters)


def grids() -> Dict[str, Dict[str, List[Any]]]:
    """``{label: tuning grid}`` of every entry with one (paper default first): :data:`GRIDS`."""
    return GRIDS


def colours() -> Dict[str, str]:
    """``{label: colour}`` of every entry that has its own (the aliases take their method's)."""
    return {e.label: e.colour for e in all_entries() if e.colour}


def name_labels() -> Dict[str, str]:
    """Every other name of a coloured entry -> that entry's label: aliases' labels, the
    registered names (the first coloured entry of each method), and each entry's ``also``."""
    out: Dict[str, str] = {}
    for e in all_entries():
        own = _BY_KEY[e.alias_of] if e.alias_of else e
        if e.alias_of:
            out[e.label] = own.label
        if e.colour and e.method not in out:
            out[e.method] = e.label
        for name in e.also:
            out[name] = own.label
    return out


def paper_claims() -> Dict[str, str]:
    """``{label: claim}``: each paper's headline claim against AN, in the claims table's order."""
    ranked = sorted((e for e in all_entries() if e.claim), key=lambda e: e.claim_rank)
    return {e.label: e.claim for e in ranked}


def citation_aliases() -> Dict[str, Tuple[str, ...]]:
    """The bibliography's names of each work (:func:`mlpl_lab.core.bibliography.aliases`) and
    each method label of a work-citing entry that is not already one of them, with the works it
    may mean."""
    out = dict(_work_aliases())
    for e in all_entries():
        if e.bib and e.alias_of is None and len(e.label) > 1:  # "v", "L": words of any formula
            keys = out.get(e.label, ())
            if e.bib not in keys:
                out[e.label] = keys + (e.bib,)
    return out
