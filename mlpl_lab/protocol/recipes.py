"""One recipe per catalogue row: how the row becomes run specs in the protocol's cells.

A catalogue entry (:mod:`mlpl_lab.catalogue`) says what a row *is*: its label, registered method
and fixed hyperparameters, tuning grid, colour, citation and paper claim. A **cell** of the
protocol (07's grid) is one row under one regime (:data:`mlpl_lab.protocol.regimes.REGIMES`) on
one seed, at the profile's scale: by default the entry's method with its fixed hyperparameters,
``P.spec(method, params, regime, regime_params, seed)`` -- the very spec a chapter builds for the
same method, so the run is shared. A row needs a recipe only where it differs from that default,
and then one line of :data:`RECIPES` (keyed by the entry's key; :func:`register_recipe` from
outside the package) says how:

* ``params(P, regime, seed)``: hyperparameters the profile or the regime decides (EPR's and ROLE's
  k from the clean validation labels, CLS's τ from its paper's column, the co-training ramp
  scaled to the run); the entry's fixed hyperparameters go over them;
* ``regimes``: where the row is defined (None: every regime);
* ``train(P)``: training overrides, its **length** and its own network (BoostLU's head;
  ``{"model_kwargs": {...}}`` is merged over the profile's, any other key replaces the profile's);
* ``spec(P, regime, regime_params, seed, params)``: a row that is not one run (LAC: its own head
  and two stages, :mod:`mlpl_lab.protocol.lac_stages`);
* ``tuned``: whether a tuned design tunes it on its grid (False: the oracle reads the true labels,
  LAC keeps chapter 05's design); ``reference``: shown, never ranked (the oracle);
* ``length_check``: its **control** where its runs are schedule-bound (the method registry's
  flag): the same cell and AN's, again at :func:`mlpl_lab.protocol.lengths.lengthened_epochs` on
  the same seeds -- :data:`PENDING` (the default: a pending family the cold series trains) or
  :data:`WITH_CELLS` (GR: asked with the cells wherever one of its runs did not converge);
* ``same_head(P, regime, regime_params, seed, params)``: a baseline on the row's own network, the
  control that separates its loss from its head (LAC: AN on the label-query head, the catalogue's
  ``lac_an``);
* ``note``: where the row leaves the protocol (07's rows table shows it).

So a method joins the course as one catalogue entry and, at most, one recipe line.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from .. import catalogue
from ..methods.cls import PAPER_E_K, paper_hparams
from ..profiles import Profile
from ..runs.spec import RunSpec
from . import lac_stages
from .design import preset
from .positives import expected_num_pos
from .regimes import REGIMES
from .tuning import selection_seed

#: ``params(P, regime label, seed)`` -> hyperparameters
ParamsRule = Callable[[Profile, str, int], Dict[str, Any]]
#: ``train(P)`` -> training overrides
TrainRule = Callable[[Profile], Dict[str, Any]]
#: ``spec(P, regime name, regime parameters, seed, hyperparameters)`` -> the cell's run
SpecRule = Callable[[Profile, str, Mapping[str, Any], int, Mapping[str, Any]], RunSpec]

#: where a schedule-bound row's length check goes: a pending family of its own (the cold series
#: trains it), or asked with the cells wherever one of its runs did not converge
PENDING, WITH_CELLS = "pending", "with the cells"


@dataclass(frozen=True)
class Recipe:
    """How one catalogue row becomes runs where it is not the default (the module docstring)."""

    params: Optional[ParamsRule] = None
    regimes: Optional[Tuple[str, ...]] = None
    train: Optional[TrainRule] = None
    spec: Optional[SpecRule] = None
    tuned: bool = True
    reference: bool = False
    length_check: str = PENDING
    same_head: Optional[SpecRule] = None
    note: str = ""

    def __post_init__(self):
        if self.length_check not in (PENDING, WITH_CELLS):
            raise ValueError(f"length_check is {PENDING!r} or {WITH_CELLS!r}, got {self.length_check!r}")
        unknown = set(self.regimes or ()) - set(REGIMES)
        if unknown:
            raise ValueError(f"a recipe names regimes the lab does not have: {sorted(unknown)}; "
                             f"choose from {list(REGIMES)}")


# ------------------------------------------------------------------------- the rules of the rows
def expected_positives(P: Profile, regime: str, seed: int) -> Dict[str, Any]:
    """EPR's and ROLE's expected positives per image, chapter 02's k
    (:func:`mlpl_lab.protocol.positives.expected_num_pos`). It does not depend on the regime, and
    only the validation labels are drawn for it: a design holds specs, not splits."""
    return {"expected_num_pos": expected_num_pos(P, seed)}


#: CLS's paper gives τ_h for single positive and the drop rates only (Table 2's columns)
CLS_PAPER_REGIMES = ("drop 25 %", "drop 50 %", "drop 75 %", "single positive")
#: ... a size-biased single positive is still single positive: the same τ
CLS_REGIMES = CLS_PAPER_REGIMES + ("single positive (size-biased)",)
#: the dataset column of CLS's paper whose τ the lab takes (COCO's), and the co-training
#: baselines' forget rate (their papers' 0.2)
TAU_DATASET, FORGET_RATE = "coco", 0.2
def ramp_epochs(epochs: int) -> int:
    """The ramp of CLS and the co-training family scaled to a run of ``epochs``: half the run, at
    least 1, at most the paper's E_k = 10."""
    if isinstance(epochs, bool) or not isinstance(epochs, int) or epochs < 1:
        raise ValueError(f"epochs must be an integer >= 1, got {epochs!r}")
    return min(PAPER_E_K, max(1, epochs // 2))


def cls_tau(P: Profile, regime: str, seed: int) -> Dict[str, Any]:
    """CLS's τ from its paper's column for the regime (chapter 04's rule, by regime name)."""
    name, params = REGIMES[regime]
    return paper_hparams(TAU_DATASET, name, params.get("alpha"), E_k=ramp_epochs(P.epochs))


def co_training(P: Profile, regime: str = "", seed: int = 0) -> Dict[str, Any]:
    """Co-teaching, Co-teaching+ and JoCoR: the forget rate and the ramp scaled to the run."""
    return {"forget_rate": FORGET_RATE, "T_k": ramp_epochs(P.epochs)}


#: BoostLU's boost α on the positive part of the class activation map (its paper's default, 5)
BOOSTLU_ALPHA = 5.0
BOOSTLU_NOTE = (f"own head: a 1x1-conv class activation map whose positive part is boosted (BoostLU, "
                f"α = {BOOSTLU_ALPHA:g}) before the pooling, at training and at evaluation; the loss is the LL row's")


def boostlu(P: Profile) -> Dict[str, Any]:
    """BoostLU's network: the profile's backbone with the ``boostlu`` head (1x1-conv CAM, positive
    part × α, then pooling; :mod:`mlpl_lab.models.boostlu`), at training and at evaluation."""
    return {"model_kwargs": {"head": "boostlu", "head_kwargs": {"alpha": BOOSTLU_ALPHA}}}


#: the OPML family's epochs where they differ from the profile's, per profile: none (at the cpu
#: profile's 54 epochs every OPML row meets the convergence criterion, which each run records);
#: chapter 03's design and 07's OPML cells read it here
OPML_EPOCHS: Dict[str, Optional[int]] = {"cpu": None}


def opml_epochs(P: Profile) -> Optional[int]:
    """The OPML rows' epochs under ``P`` (None: the profile's; :data:`OPML_EPOCHS`)."""
    return preset(OPML_EPOCHS, P)


def opml_length(P: Profile) -> Dict[str, Any]:
    """The OPML rows' training overrides: their epochs where :data:`OPML_EPOCHS` sets them."""
    e = opml_epochs(P)
    return {} if e is None else {"epochs": e}


def lac_cell(P: Profile, regime: str, regime_params: Mapping[str, Any], seed: int,
             params: Mapping[str, Any]) -> RunSpec:
    """LAC's cell: two stages and the queue on its own head (chapter 05's LAC row)."""
    return lac_stages.lac_spec(P, regime, regime_params, seed, params)


def an_on_lac_head(P: Profile, regime: str, regime_params: Mapping[str, Any], seed: int,
                   params: Mapping[str, Any] | None = None) -> RunSpec:
    """AN on LAC's network for stage 1's epochs (the catalogue's ``lac_an``, chapter 05's AN row)."""
    return lac_stages.on_own_head(P, catalogue.entry("lac_an").method, regime, regime_params, seed)


#: catalogue key -> recipe, for the rows that are not the default (one line each)
RECIPES: Dict[str, Recipe] = {
    "oracle": Recipe(tuned=False, reference=True,
                     note="reads the true labels: the upper bound (one run per seed serves every column)"),
    "epr": Recipe(params=expected_positives),
    "role": Recipe(params=expected_positives),
    "ll_r_boostlu": Recipe(train=boostlu, note=BOOSTLU_NOTE),
    "ll_ct_boostlu": Recipe(train=boostlu, note=BOOSTLU_NOTE),
    "ll_cp_boostlu": Recipe(train=boostlu, note=BOOSTLU_NOTE),
    "gr": Recipe(length_check=WITH_CELLS),
    "opml": Recipe(train=opml_length),
    "opml_sp": Recipe(train=opml_length),
    "cls": Recipe(params=cls_tau, regimes=CLS_REGIMES,
                  note="τ_h is given by its paper for single positive and the drop rates only"),
    "coteaching": Recipe(params=co_training),
    "coteaching_plus": Recipe(params=co_training),
    "jocor_row": Recipe(params=co_training),
    "lac": Recipe(spec=lac_cell, tuned=False, same_head=an_on_lac_head,
                  regimes=tuple(label for label, (name, params) in REGIMES.items()
                                if lac_stages.regime_defined(name, params)),
                  note="own head (label query) and two stages with its paper's optimiser: chapter 05's design; "
                       "known negatives are masked out of PLC and the contrastive loss (never pseudo-positives)"),
    "pu_mlc": Recipe(note="reads observed positives only (observed negatives count as unlabelled)"),
}
_DEFAULT = Recipe()


def register_recipe(key: str, recipe: Recipe) -> None:
    """Give catalogue entry ``key`` its recipe from outside the package (the one line a new row
    may need); an entry with no recipe takes the default (its method, its fixed hyperparameters)."""
    catalogue.entry(key)  # an unknown key is an error naming the known ones
    RECIPES[key] = recipe


def unregister_recipe(key: str) -> None:
    """Drop the recipe :func:`register_recipe` gave ``key`` (the package's own are kept)."""
    if key in _OWN:
        raise ValueError(f"{key!r} is one of the package's own recipes, not a registered one")
    RECIPES.pop(key, None)


_OWN = frozenset(RECIPES)


# ---------------------------------------------------------------------------------- the rows
@dataclass(frozen=True)
class Row:
    """One catalogue row with its recipe: what a cell of it is (:func:`spec_for`)."""

    key: str
    label: str
    method: str
    chapter: str
    fixed: Mapping[str, Any] = field(default_factory=dict)
    recipe: Recipe = _DEFAULT

    @property
    def regimes(self) -> Optional[Tuple[str, ...]]:
        return self.recipe.regimes

    @property
    def note(self) -> str:
        return self.recipe.note

    def applies(self, regime: str) -> bool:
        """Whether the row is defined under the regime labelled ``regime``."""
        return self.recipe.regimes is None or regime in self.recipe.regimes

    def params(self, P: Profile, regime: str, seed: int) -> Dict[str, Any]:
        """The row's hyperparameters in one cell: its recipe's (from the profile, the regime, the
        seed) with the entry's fixed ones over them."""
        own = self.recipe.params(P, regime, seed) if self.recipe.params else {}
        return dict(own, **dict(self.fixed))

    def train(self, P: Profile) -> Dict[str, Any]:
        """The row's training overrides over the profile's (``model_kwargs`` merged)."""
        out: Dict[str, Any] = {}
        for key, value in (self.recipe.train(P) if self.recipe.train else {}).items():
            out[key] = dict(P.model_kwargs, **value) if key == "model_kwargs" else value
        return out


def rows(chapter: str = "07") -> Tuple[Row, ...]:
    """Every catalogue entry notebook ``chapter`` shows, with its recipe, in the catalogue's order
    (registered entries last): read when asked, so an entry registered from outside the package is
    a row too."""
    return tuple(Row(e.key, e.label, e.method, e.chapter, dict(e.params), RECIPES.get(e.key, _DEFAULT))
                 for e in catalogue.in_chapter(chapter))


def row(label: str, chapter: str = "07") -> Row:
    """The row labelled ``label`` (a KeyError naming the rows otherwise)."""
    for r in rows(chapter):
        if r.label == label:
            return r
    raise KeyError(f"no row {label!r} in chapter {chapter}; rows: {[r.label for r in rows(chapter)]}")


def reference_rows(chapter: str = "07") -> Tuple[str, ...]:
    """The labels of the rows shown and never ranked (the oracle)."""
    return tuple(r.label for r in rows(chapter) if r.recipe.reference)


def untuned_rows(chapter: str = "07") -> Tuple[str, ...]:
    """The labels of the rows a tuned design does not tune (the oracle, LAC)."""
    return tuple(r.label for r in rows(chapter) if not r.recipe.tuned)


def resolve_methods(names: Sequence[str] | None, chapter: str = "07") -> Optional[List[str]]:
    """Row labels from labels or registered method names (case-insensitive); a bad name is an
    error listing the choices."""
    if names is None:
        return None
    every = rows(chapter)
    out = []
    for n in names:
        hit = [r.label for r in every if n.lower() in (r.label.lower(), r.method.lower())]
        if not hit:
            raise ValueError(f"unknown benchmark method {n!r}; choose from "
                             f"{[r.label for r in every]} (or their registered names "
                             f"{[r.method for r in every]})")
        if hit[0] not in out:
            out.append(hit[0])
    return out


# ------------------------------------------------------------------------------------ the cells
def spec_for(P: Profile, row_label: str, regime: str, seed: int,
             params: Dict[str, Any] | None = None, scene: Mapping[str, Any] | None = None) -> RunSpec:
    """The run of one cell -- row ``row_label`` under the regime labelled ``regime`` on ``seed``
    (``params``: its hyperparameters, the row's own when None; ``scene``: a setting of the scene
    generator's knobs, the profile's scenes when None) -- identical to the chapter's spec of the
    same method, so its run is reused."""
    r = row(row_label)
    name, rp = REGIMES[regime]
    hp = r.params(P, regime, seed) if params is None else dict(params)
    if r.recipe.spec is not None:
        if scene:
            raise ValueError(f"{r.label} is not one run (its recipe builds its cells): it has no cell on "
                             "another scene setting")
        return r.recipe.spec(P, name, rp, seed, hp)
    extra = {} if scene is None else {"scene": dict(scene)}
    return P.spec(r.method, hp, name, rp, seed=seed, **extra, **r.train(P))


def trial_params(P: Profile, row_label: str, regime: str, point: Mapping[str, Any]) -> Dict[str, Any]:
    """A trial's (or the kept trial's) hyperparameters: the row's own on the selection seed
    (:func:`mlpl_lab.protocol.tuning.selection_seed`) with ``point`` (what differs from the paper
    default, :func:`mlpl_lab.protocol.tuning.trial_points`) over them. The kept point runs with
    these on every fresh seed."""
    return dict(row(row_label).params(P, regime, selection_seed(P)), **point)


def same_head_spec(P: Profile, row_label: str, regime: str, seed: int) -> RunSpec:
    """The baseline on row ``row_label``'s own network in one cell (its recipe's ``same_head``: AN
    on LAC's label-query head), the control that separates the row's loss from its head."""
    r = row(row_label)
    if r.recipe.same_head is None:
        raise ValueError(f"{r.label}'s recipe names no baseline on its own network")
    name, rp = REGIMES[regime]
    return r.recipe.same_head(P, name, rp, seed, {})
