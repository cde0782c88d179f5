"""Claims computed from runs: the paper's claim and number, ours paired by seed, a verdict.

A claim says "A beats B" on a metric read at each run's best-val epoch. Its two sides are
**paired by seed** (seed ``s`` draws the split, the observed labels and the initialisation, so
A_s and B_s saw the same data): only the seeds both sides ran count, d_s = A_s − B_s.

**Keys.** A claim is keyed by a stable identifier (``Claim.id``: what it compares, from catalogue
keys and regime slugs, e.g. ``beats_an/gr/single``; :func:`claim_id`), never by its sentence: the
sentence ("GR beats AN under single positive") is a rendering, kept in the table's ``claim``
column and the record's ``claim`` field, and may name what was chosen on validation (the best
other method) where the identifier does not. A control names the identifier of the claim it
checks (``control_of``). A claim without an identifier is keyed by its sentence.

**Families.** Every claim answers one question, and the questions are declared in a chapter's
design before any run is read (:class:`Family`: its name and its size m, the number of
comparisons the design asks that question with). A family is corrected for its own m and for
nothing else: a claim added to another family, or another family added to the chapter, leaves
its verdicts unchanged. A claim that declares no family is a question of its own (m = 1).
Model-selection diagnostics that are not questions of the paper (07's per-cell
clean-vs-observed differences) are not claims at all: they are an exploratory table with
unadjusted intervals (Bender & Lange 2001).

**Controls decide.** A *control* (a length check, an equal-epochs control) is attached to the
claim it checks (``control_of``) and asks that claim's question once more, with the one thing the
claim left unequal made equal. So it sits in its parent's family and is one more comparison of
it: the family's m is its declared size **plus the controls attached to its claims** (a control
is asked only where its parent's runs made it necessary — a schedule-bound row, a losing side
still gaining — so the design cannot declare it ahead; it is counted when it is asked). Every
claim of that family, its controls included, is read at that m (:func:`family_sizes`). Adding a
control therefore widens the family-wise intervals of its family; no other family moves.

A claim decided on its own interval (*holds* or *does not hold*) is then read against its
controls (:func:`apply_controls`):

* a control that reaches the same verdict leaves it unchanged;
* a control whose family-wise interval lies on the **other side** of 0 (the parent holds and the
  control does not hold, or the reverse) **overturns** it: ``"overturned by its control"``
  (:data:`OVERTURNED`), counted apart from *holds* and *does not hold* in every total;
* a control that is inconclusive (its interval contains 0, or fewer than 3 seeds) leaves the
  claim ``"inconclusive (its control is inconclusive)"`` (:data:`CONTROL_INCONCLUSIVE`): what
  the claim left unequal may be all there is to its margin.

A claim that is inconclusive on its own stays so, whatever its control says: a control checks a
verdict, it does not make one. The claim's own verdict stays in the record (``verdict_alone``).

* **margin** = mean of the n paired differences, d̄;
* **95 % interval (unadjusted)** = d̄ ± t(0.975, n − 1) · s_d / √n (Student t, df = n − 1,
  s_d the sample standard deviation of the differences, ddof = 1);
* **family-wise interval** = d̄ ± t(1 − 0.05/(2m), n − 1) · s_d / √n: the Bonferroni interval at
  level 1 − 0.05/m, m the claim's family size. The m intervals of a family cover their true
  differences together with probability ≥ 95 %. It is the interval that decides;
* **p** = two-sided p-value of the paired t-test of d̄ = 0 (unadjusted; shown, never deciding).

**Verdict** ("A beats B"), read off the family-wise interval shown beside it:

* fewer than 3 paired seeds → ``"inconclusive (n seeds)"``, kind *observation*: its margin (and
  with two seeds its intervals) is shown, never judged; no spread is borrowed from another
  comparison;
* *holds* — the family-wise interval lies above 0 (its lower bound > 0);
* *does not hold* — it lies below 0 (its upper bound < 0): the data say the opposite;
* *inconclusive* — otherwise: the family-wise interval contains 0, or the margin is not a
  number (a NaN value, no shared seed), or every difference is identical (zero spread: scipy's
  ``ttest_1samp`` then returns t = ±inf, p = 0 and a zero-width interval, or NaN when the
  differences are all 0 — a point, not evidence).

**At risk**: a verdict (*holds* or *does not hold*, after its controls) whose *losing* side (B
when d̄ > 0, A when d̄ < 0) has a run that did not converge: that side was still improving when
training stopped, so a longer run could narrow the margin. A verdict whose winning side did not
converge is conservative, not at risk. A claim at risk without a control to settle it can be
marked so in its table (:func:`mark_uncontrolled`).

The ``reason`` column says which. Bouthillier et al. (2021) and Demšar (2006) motivate pairing;
the notebooks display :func:`explain` instead of restating the rule. Prose in the notebooks
never states an outcome; it prints these verdicts.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence

import numpy as np

HOLDS, FAILS, INCONCLUSIVE = "holds", "does not hold", "inconclusive"
#: a claim whose control's family-wise interval lies on the other side of 0 (module docstring)
OVERTURNED = "overturned by its control"
#: a claim decided alone whose control is inconclusive (module docstring)
CONTROL_INCONCLUSIVE = f"{INCONCLUSIVE} (its control is inconclusive)"
FINDING, OBSERVATION, CONTROL = "finding", "observation", "control"
MIN_SEEDS = 3          # paired seeds a claim needs to be a finding
LEVEL = 0.95           # the unadjusted interval's level
ALPHA = 0.05           # the family-wise error rate: each family's intervals are at 1 − ALPHA/m
CI95 = "95 % CI (unadjusted)"
CI_FAMILY = "margin [family-wise CI]"


@dataclass(frozen=True)
class Family:
    """One confirmatory question, declared in a chapter's design before any run is read:
    ``name`` (what the table groups by), ``size`` (m: how many comparisons the design asks it
    with; every claim of the family is decided at level 1 − :data:`ALPHA`/m) and ``question``
    (one sentence for the reader). Two claims name the same family only through the same object
    (or an equal one)."""

    name: str
    size: int
    question: str = ""

    def __post_init__(self):
        if not isinstance(self.size, int) or self.size < 1:
            raise ValueError(f"family {self.name!r}: size must be a whole number ≥ 1 (the comparisons "
                             f"the design asks), got {self.size!r}")

    @property
    def level(self) -> float:
        """The level of each of its intervals (Bonferroni) before any control: 1 − 0.05/m, m the
        declared size (a table counts the family's controls on top: :func:`family_sizes`)."""
        return 1 - ALPHA / self.size


def claim_id(*parts: Any) -> str:
    """A claim's stable identifier: its parts (a comparison's name, catalogue keys, regime slugs)
    joined by ``/``, e.g. ``claim_id("beats_an", "gr", "single") == "beats_an/gr/single"``."""
    bad = [p for p in parts if not str(p) or "/" in str(p) or " " in str(p)]
    if bad:
        raise ValueError(f"a claim identifier's parts are words without spaces or '/': {bad}")
    return "/".join(str(p) for p in parts)


def own_family(claim: str) -> Family:
    """The family of a claim that declares none: a question of its own, m = 1."""
    return Family(claim, 1)


def by_seed(runs, metric: str = "test_mAP") -> Dict[int, float]:
    """``{seed: metric at the best-val epoch}`` of a set of runs (index when a run has no spec)."""
    out = {}
    for i, r in enumerate(runs):
        seed = getattr(getattr(r, "spec", None), "seed", i)
        out[int(seed)] = float(r.best[metric])
    return out


def inconclusive(n: int) -> str:
    """The verdict of a claim on fewer than :data:`MIN_SEEDS` paired seeds (exact text)."""
    return f"{INCONCLUSIVE} ({n} seeds)"


def _seed_list(seeds) -> str:
    return ", ".join(str(s) for s in seeds) or "none"


def t_interval(diffs: Sequence[float], level: float) -> tuple[float, float]:
    """The Student-t interval of the mean of ``diffs`` at ``level`` (two-sided):
    d̄ ± t((1 + level)/2, n − 1) · s_d/√n. NaN below two values."""
    from scipy import stats

    d = np.asarray(diffs, dtype=float)
    n = len(d)
    if n < 2:
        return math.nan, math.nan
    half = float(stats.t.ppf(0.5 + level / 2, n - 1)) * float(d.std(ddof=1)) / math.sqrt(n)
    return float(d.mean()) - half, float(d.mean()) + half


def paired(a: Mapping[int, float], b: Mapping[int, float], level: float = LEVEL) -> Dict[str, Any]:
    """The paired comparison of two ``{seed: value}`` maps (module docstring):
    ``{"seeds", "diffs", "n", "margin", "sd", "lo", "hi", "p", "reason"}`` (``lo``/``hi``: the
    interval at ``level``). ``reason`` is "" when the interval and p are defined, else why not
    (NaN in ``lo``/``hi``/``p``)."""
    from scipy import stats

    seeds = sorted(set(a) & set(b))
    diffs = [float(a[s]) - float(b[s]) for s in seeds]
    n = len(seeds)
    out = {"seeds": seeds, "diffs": diffs, "n": n, "margin": math.nan, "sd": math.nan,
           "lo": math.nan, "hi": math.nan, "p": math.nan, "reason": ""}
    if n == 0:
        out["reason"] = (f"no seed ran on both sides (A on {_seed_list(sorted(a))}, "
                         f"B on {_seed_list(sorted(b))})")
        return out
    bad = [s for s, d in zip(seeds, diffs) if not math.isfinite(d)]
    if bad:
        out["reason"] = f"a value is not a number on seed {_seed_list(bad)}"
        return out
    d = np.asarray(diffs)
    out["margin"] = float(d.mean())
    if n < 2:
        out["reason"] = "one paired seed: no interval"
        return out
    sd = float(d.std(ddof=1))
    out["sd"] = sd
    if sd <= 1e-9 * max(1.0, abs(out["margin"])):
        out["reason"] = (f"zero spread: all {n} differences equal {out['margin']:+.2f}, so the "
                         "t-interval has zero width (undefined as evidence)")
        return out
    lo, hi = t_interval(diffs, level)
    t = out["margin"] / (sd / math.sqrt(n))
    out.update(lo=lo, hi=hi, p=float(2 * stats.t.sf(abs(t), n - 1)))
    return out


def decide(c: Mapping[str, Any], m: int = 1) -> tuple[str, str, str]:
    """``(verdict, kind, reason)`` of a paired comparison ``c`` whose family has ``m`` claims:
    ``c["lo"]``/``c["hi"]`` is its family-wise interval, at level 1 − :data:`ALPHA`/m
    (module docstring)."""
    n = c["n"]
    kind = FINDING if n >= MIN_SEEDS else OBSERVATION
    if n < MIN_SEEDS:
        why = c["reason"] or "shown, not judged"
        return inconclusive(n), kind, f"fewer than {MIN_SEEDS} paired seeds: {why}"
    if c["reason"]:
        return INCONCLUSIVE, kind, c["reason"]
    if c["lo"] <= 0 <= c["hi"]:
        return INCONCLUSIVE, kind, f"the family-wise interval ({_level(m)}, m = {m}) contains 0"
    return (HOLDS if c["lo"] > 0 else FAILS), kind, ""


def _level(m: int) -> str:
    """The family-wise level as text: "95 %" for m = 1, "98.75 %" for m = 4."""
    return f"{100 * (1 - ALPHA / m):.4g} %"


def _key(run) -> Optional[str]:
    """A stored run's key (None for a stand-in without one)."""
    key = getattr(getattr(run, "spec", None), "key", None)
    return key if isinstance(key, str) else None


def trained_epochs(runs) -> Optional[int]:
    """How long ``runs`` trained: the longest epochs their specs hold (None where none says)."""
    got = [int(r.spec.train["epochs"]) for r in runs
           if isinstance(getattr(getattr(r, "spec", None), "train", None), Mapping) and "epochs" in r.spec.train]
    return max(got) if got else None


def _not_converged(runs) -> List[Any]:
    return [getattr(getattr(r, "spec", None), "seed", i) for i, r in enumerate(runs)
            if getattr(r, "converged", None) is False]


def convergence(sides: Sequence[tuple[str, Sequence[Any]]]) -> tuple[str, Optional[bool]]:
    """``(text, flag)`` over every run of the claim: ``("yes", True)`` when every run has
    ``converged is True``; which label/seeds did not (``False``); ``("unknown", None)`` when
    no run says it did not but some do not say."""
    failed, unknown = [], False
    for label, runs in sides:
        seeds = _not_converged(runs)
        unknown |= any(getattr(r, "converged", None) is None for r in runs)
        if seeds:
            failed.append(f"{label} seed{'s' if len(seeds) > 1 else ''} {_seed_list(seeds)}")
    if failed:
        return "no: " + "; ".join(failed) + (" (others unknown)" if unknown else ""), False
    return ("unknown", None) if unknown else ("yes", True)


def _num(x: float, fmt: str = "+.2f") -> str:
    return "—" if not math.isfinite(x) else format(x, fmt)


def _p(x: float) -> str:
    if not math.isfinite(x):
        return "—"
    return "< 0.001" if x < 0.001 else f"{x:.3f}"


@dataclass
class Claim:
    """One row of a chapter's claims table: "A beats B" on ``metric``, paired by seed.
    ``family``: the question it answers (:class:`Family`, declared in the chapter's design);
    ``control_of``: the claim it checks, for a control (it sits in that claim's family and is
    counted in its m; module docstring, "Controls decide")."""

    claim: str                    # "A beats B under <regime>"
    paper: str                    # the paper's number(s), as a short text
    a_label: str
    b_label: str
    a_runs: Sequence[Any] = field(repr=False)
    b_runs: Sequence[Any] = field(repr=False)
    metric: str = "test_mAP"
    values: Optional[tuple] = field(default=None, repr=False)  # (a, b) {seed: value}, see of_values
    groups: Optional[Dict[str, Sequence[Any]]] = field(default=None, repr=False)  # label -> runs
    family: Optional[Family] = None
    control_of: Optional[str] = None  # the key (identifier) of the claim a control checks
    side_labels: Optional[tuple] = field(default=None, repr=False)  # (A's, B's) labels in groups
    id: Optional[str] = None          # the stable identifier (:func:`claim_id`); None: the sentence

    def __post_init__(self):
        if self.family is not None and self.control_of is not None:
            raise ValueError(f"claim {self.claim!r} is a control of {self.control_of!r} and names "
                             f"family {self.family.name!r}: a control sits in the family of the claim it checks; "
                             "drop the family")

    @property
    def key(self) -> str:
        """What the table and the record key the claim by: its identifier, else its sentence."""
        return self.id or self.claim

    @classmethod
    def of_values(cls, claim: str, paper: str, a_label: str, b_label: str,
                  a: Mapping[int, float], b: Mapping[int, float],
                  runs: Mapping[str, Sequence[Any]] | None = None, family: Optional[Family] = None,
                  control_of: Optional[str] = None, sides: Optional[tuple] = None,
                  id: Optional[str] = None) -> "Claim":
        """A claim on per-seed values computed elsewhere (e.g. a difference of two margins);
        ``runs``: ``{label: runs}`` they come from (their convergence is reported); ``sides``:
        ``(A's labels, B's labels)`` among them, for the at-risk mark (None: not known)."""
        return cls(claim, paper, a_label, b_label, [], [], values=(dict(a), dict(b)),
                   groups=dict(runs or {}), family=family, control_of=control_of, side_labels=sides, id=id)

    def family_of(self, claims: Optional[Mapping[str, "Claim"]] = None) -> Family:
        """The claim's family: declared, or a question of its own (m = 1); a control's is the
        family of the claim it checks (``claims``: ``{key: Claim}`` of the table, followed up to
        a claim that is no control)."""
        if self.control_of is not None:
            parent = (claims or {}).get(self.control_of)
            if parent is None or parent is self:
                raise KeyError(f"controls of claims not in the table: [{self.key!r}] checks "
                               f"{self.control_of!r}; a control is shown with the claim it checks")
            return parent.family_of({k: c for k, c in claims.items() if c is not self})
        return self.family if self.family is not None else own_family(self.claim)

    def sides(self) -> tuple[Dict[int, float], Dict[int, float]]:
        if self.values is not None:
            return self.values
        return by_seed(self.a_runs, self.metric), by_seed(self.b_runs, self.metric)

    def side_runs(self) -> Optional[tuple[List[Any], List[Any]]]:
        """``(A's runs, B's runs)`` where they are known (None for a values claim without
        ``sides``)."""
        if self.values is None:
            return list(self.a_runs), list(self.b_runs)
        labels = self.side_labels
        if labels is None:
            return None
        g = self.groups or {}
        return ([r for k in labels[0] for r in g.get(k, ())], [r for k in labels[1] for r in g.get(k, ())])

    def row(self, m: int = 1, family: Optional[Family] = None, controls: int = 0) -> Dict[str, Any]:
        """The row: its 95 % (unadjusted) and family-wise (m comparisons) intervals, and its
        verdict on its own interval (:func:`apply_controls` then reads it against its controls).
        ``family``: the family it is read in (default :meth:`family_of`); ``controls``: how many
        of the family's m are controls (shown in the family column)."""
        a, b = self.sides()
        c = paired(a, b)
        seeds = c["seeds"]
        if seeds:
            ma, mb = (float(np.mean([x[s] for s in seeds])) for x in (a, b))
        else:  # nothing paired: each side's own mean, for the reader only
            ma, mb = (float(np.mean(list(x.values()))) if x else math.nan for x in (a, b))
        groups = self.groups if self.groups is not None else {self.a_label: self.a_runs,
                                                               self.b_label: self.b_runs}
        conv, flag = convergence(list(groups.items()))
        flo, fhi = (t_interval(c["diffs"], 1 - ALPHA / m) if math.isfinite(c["lo"])
                    else (math.nan, math.nan))
        verdict, kind, reason = decide({"n": c["n"], "lo": flo, "hi": fhi, "reason": c["reason"]}, m)
        fam = family if family is not None else self.family_of()
        if self.control_of is not None and kind == FINDING:
            kind = CONTROL
        # at risk: the losing side (B when the margin is positive, A when negative) did not converge
        at_risk, losing = False, None
        runs = self.side_runs()
        if runs is not None and math.isfinite(c["margin"]) and c["margin"] != 0:
            losing = self.b_label if c["margin"] > 0 else self.a_label
            lose_runs = runs[1] if c["margin"] > 0 else runs[0]
            at_risk = bool(_not_converged(lose_runs)) and verdict in (HOLDS, FAILS)
        if at_risk:
            conv = f"{conv}{AT_RISK.format(losing)}"
        keys = None if runs is None else tuple(sorted(k for k in (_key(r) for r in side) if k)
                                               for side in runs)
        size = (f"m = {m}" if not controls else
                 f"m = {m}: {m - controls} declared + {controls} control{'s' if controls > 1 else ''}")
        return {"id": self.key, "family": f"{fam.name} ({size})", "claim": self.claim, "paper": self.paper,
                "ours": f"{self.a_label} {ma:.1f} vs {self.b_label} {mb:.1f}",
                CI_FAMILY: f"{_num(c['margin'])} [{_num(flo)}, {_num(fhi)}]",
                CI95: f"[{_num(c['lo'])}, {_num(c['hi'])}]",
                "seeds": f"{c['n']}: {_seed_list(seeds)}",
                "p": _p(c["p"]), "verdict": verdict, "kind": kind, "reason": reason, "converged": conv,
                "_a": a, "_b": b, "_seeds": seeds, "_diffs": c["diffs"], "_n": c["n"],
                "_margin": c["margin"], "_lo": c["lo"], "_hi": c["hi"], "_p": c["p"],
                "_flo": flo, "_fhi": fhi, "_family": fam.name, "_m": m,
                "_control_of": self.control_of, "_reason": c["reason"], "_converged": flag,
                "_at_risk": at_risk, "_losing": losing if at_risk else None, "_keys": keys,
                "_epochs": None if runs is None else tuple(trained_epochs(side) for side in runs),
                "_verdict_alone": verdict, "_controls": (), "_uncontrolled": None}


COLUMNS = ["claim", "family", "paper", "ours", CI_FAMILY, CI95, "seeds", "p", "verdict", "kind", "reason",
           "converged"]


def _ordered(claims: List[Claim]) -> List[Claim]:
    """Grouped by family (families in the order of their first claim), each control right after
    the claims of its family (the family of the claim it checks)."""
    families: Dict[str, List[Claim]] = {}
    controls: Dict[str, List[Claim]] = {}
    for c in claims:
        if c.control_of is not None:
            controls.setdefault(c.control_of, []).append(c)
        else:
            families.setdefault(c.family_of().name, []).append(c)
    out: List[Claim] = []

    def with_controls(key: str) -> List[Claim]:
        got = controls.pop(key, [])
        return got + [d for c in got for d in with_controls(c.key)]

    for members in families.values():
        out += members
        for c in members:
            out += with_controls(c.key)
    return out + [c for cs in controls.values() for c in cs]


def check_families(claims: Sequence[Claim]) -> Dict[str, Family]:
    """``{name: Family}`` of the claims, after checking the declarations: one definition per
    name, no family holding more claims than it declared (its controls apart: they are counted
    on top, :func:`family_sizes`), no claim named twice, every control attached to a claim of the
    table. Bad declarations are errors that name the fix."""
    names = [c.key for c in claims]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ValueError(f"claims named twice: {twice}; give each comparison its own name")
    orphans = [c.key for c in claims if c.control_of is not None and c.control_of not in names]
    if orphans:
        raise KeyError(f"controls of claims not in the table: {orphans}; a control is shown with "
                       "the claim it checks")
    by_key = {c.key: c for c in claims}
    fams: Dict[str, Family] = {}
    count: Dict[str, int] = {}
    for c in claims:
        f = c.family_of(by_key)
        if fams.setdefault(f.name, f) != f:
            raise ValueError(f"family {f.name!r} is declared twice with different sizes or questions "
                             f"({fams[f.name]} and {f}); declare it once in the chapter's design")
        if c.control_of is None:
            count[f.name] = count.get(f.name, 0) + 1
    over = {n: (count[n], fams[n].size) for n in count if count[n] > fams[n].size}
    if over:
        raise ValueError("a family holds more claims than its design declared: "
                         + "; ".join(f"{n!r} has {k} claims, declared m = {m}" for n, (k, m) in over.items())
                         + ". Declare every comparison of the question in the chapter's design")
    return fams


def family_sizes(claims: Sequence[Claim]) -> Dict[str, tuple[int, int]]:
    """``{family name: (m, controls)}``: m = the family's declared size plus the controls attached
    to its claims (each control is one more comparison of its parent's question, module
    docstring, "Controls decide"); ``controls``: how many of the m are controls."""
    fams = check_families(claims)
    by_key = {c.key: c for c in claims}
    controls = {name: 0 for name in fams}
    for c in claims:
        if c.control_of is not None:
            controls[c.family_of(by_key).name] += 1
    return {name: (f.size + controls[name], controls[name]) for name, f in fams.items()}


#: the at-risk mark of the ``converged`` column (its losing side's label in the braces)
AT_RISK = " ⚠ at risk: the losing side ({}) did not converge"


def apply_controls(rows: Dict[str, Dict[str, Any]], sentences: Mapping[str, str]) -> None:
    """Each claim's verdict read against its controls, in place (``rows``: ``{key: row}`` of
    :meth:`Claim.row`, each with ``_verdict_alone``; ``sentences``: ``{key: sentence}``). A claim
    decided alone (*holds* / *does not hold*) is :data:`OVERTURNED` when a control's family-wise
    interval lies on the other side of 0, :data:`CONTROL_INCONCLUSIVE` when a control is
    inconclusive, unchanged when every control agrees; an inconclusive claim stays inconclusive.
    A control of a control is applied first (deepest first). A claim whose final verdict is
    neither *holds* nor *does not hold* is at risk of nothing: its mark is dropped."""
    kids: Dict[str, List[str]] = {}
    for key, r in rows.items():
        if _text(r["_control_of"]):
            kids.setdefault(r["_control_of"], []).append(key)

    def settle(key: str, seen: tuple = ()) -> None:
        if key in seen:
            raise ValueError(f"controls that check each other: {seen + (key,)}")
        for k in kids.get(key, []):
            settle(k, seen + (key,))
        r = rows[key]
        mine = kids.get(key, [])
        r["_controls"] = tuple(mine)
        if not mine or r["verdict"] not in (HOLDS, FAILS):
            return
        other = FAILS if r["verdict"] == HOLDS else HOLDS
        against = [k for k in mine if rows[k]["verdict"] == other]
        unsure = [k for k in mine if rows[k]["verdict"] not in (HOLDS, FAILS)]

        def said(ks: List[str]) -> str:
            return "; ".join(f"*{sentences.get(k, k)}* ({rows[k][CI_FAMILY]}, family-wise, m = "
                             f"{int(rows[k]['_m'])})" for k in ks)

        if against:
            r["verdict"] = OVERTURNED
            r["reason"] = (f"alone it {r['_verdict_alone']}; its control {said(against)} "
                           f"{other}: its family-wise interval lies on the other side of 0")
        elif unsure:
            r["verdict"] = CONTROL_INCONCLUSIVE
            r["reason"] = (f"alone it {r['_verdict_alone']}; its control {said(unsure)} is inconclusive: "
                           "its family-wise interval reaches 0")

    for key, r in rows.items():
        if not _text(r["_control_of"]):
            settle(key)
    for r in rows.values():
        if r["_at_risk"] and r["verdict"] not in (HOLDS, FAILS):
            r["converged"] = r["converged"].replace(AT_RISK.format(r["_losing"]), "")
            r["_at_risk"], r["_losing"] = False, None


def claims_table(claims: List[Claim]):
    """The claims as a DataFrame (one row each), indexed by each claim's key (its identifier;
    :attr:`Claim.key`), its sentence in the ``claim`` column, grouped by family (:func:`_ordered`);
    each claim decided on its family-wise interval, m being its family's declared size plus the
    controls attached to its claims (:func:`family_sizes`), never the number of rows of this
    table, and then read against its controls (:func:`apply_controls`)."""
    import pandas as pd

    sizes = family_sizes(claims)
    by_key = {c.key: c for c in claims}
    out: Dict[str, Dict[str, Any]] = {}
    for c in _ordered(list(claims)):
        fam = c.family_of(by_key)
        m, k = sizes[fam.name]
        out[c.key] = c.row(m, fam, k)
    apply_controls(out, {c.key: c.claim for c in claims})
    rows = list(out.values())
    t = pd.DataFrame(rows, columns=["id"] + COLUMNS
                     + [k for k in (rows[0] if rows else {}) if k.startswith("_")])
    return t.set_index("id")


def mark_uncontrolled(table, notes: Mapping[str, str]):
    """``table`` with the claims in ``notes`` marked as resting on a losing side that was still
    gaining, with no control to settle it (``notes[claim]``: why there is none, e.g. the runs it
    would need are not in the design): the ``converged`` column says "‡ no control: <note>" and
    ``_uncontrolled`` keeps it for the record and the take-aways. Only a claim whose losing side
    did not converge is marked (a claim not at risk needs no control); a claim not in the table
    is an error."""
    at_risk = {c: n for c, n in notes.items() if c not in table.index or bool(table.at[c, "_at_risk"])}
    return _marked(table, at_risk, "_uncontrolled", "as uncontrolled",
                   lambda t, claim, note: f"{t.at[claim, 'converged']} ‡ no control: {note}")


def mark_schedule_bound(table, notes: Mapping[str, str]):
    """``table`` (:func:`claims_table`) with the claims in ``notes`` marked *schedule-bound*: a
    side's method moves its targets until the last epoch by design (GR, Eq. 9–13), so its runs'
    curves rise to the end; ``notes[claim]`` says what the control (the length check) found. The
    ``converged`` column shows "§ <note>" and ``_schedule`` keeps the note for the record and the
    take-aways. ``notes`` is keyed like the table (the claims' keys); a claim not in the table is an
    error (a renamed claim would drop its mark)."""
    return _marked(table, notes, "_schedule", "schedule-bound", lambda t, claim, note:
                   f"§ {note}" + (" ⚠ at risk" if bool(t.at[claim, "_at_risk"]) else ""))


def mark_waiting(table, waiting: Mapping[str, str]):
    """``table`` with the claims in ``waiting`` marked as waiting for runs a cold series trains
    (``waiting[claim]``: which runs, e.g. "the end-to-end rows at twice the epochs"): the
    ``converged`` column says so and ``_waiting`` keeps it for the record. A claim not in the
    table is an error."""
    return _marked(table, waiting, "_waiting", "as waiting for runs", lambda t, claim, what:
                   f"{t.at[claim, 'converged']}; waits for {what}")


def _marked(table, notes: Mapping[str, str], column: str, what: str, converged):
    """A copy of ``table`` with ``notes[claim]`` in ``column`` and the ``converged`` cell of each
    such claim rewritten by ``converged(table, claim, note)``; a claim not in the table is a
    KeyError naming it (``what``: how the claims were to be marked)."""
    missing = [c for c in notes if c not in table.index]
    if missing:
        raise KeyError(f"no such claims to mark {what}: {missing}")
    table = table.copy()
    table[column] = None
    for claim, note in notes.items():
        table.at[claim, column] = note
        table.at[claim, "converged"] = converged(table, claim, note)
    return table


def _json(x: float) -> Optional[float]:
    return None if x is None or not math.isfinite(x) else float(x)


def _text(x: Any) -> Optional[str]:
    """A text cell, or None (a DataFrame turns a missing text into NaN, which is truthy)."""
    return x if isinstance(x, str) and x else None


def claims_record(table) -> Dict[str, Dict[str, Any]]:
    """What a notebook records, per claim keyed by its key (its identifier) — enough to recompute
    the verdict: ``id`` and ``claim`` (the sentence, a rendering), ``a`` and ``b``
    (``{seed: value}``, seeds as strings), the paired ``seeds`` and ``diffs``, ``n``,
    ``margin``, ``ci95`` ([lo, hi], unadjusted), ``family``, ``family_size`` (m), ``ci_family``
    (the Bonferroni interval at level 1 − 0.05/m: the one that decides), ``level_family``,
    ``control_of`` (the claim a control checks, else None), ``sd`` and ``spread`` (its alias:
    the differences' sample standard deviation), ``p`` (unadjusted), ``verdict``, ``kind``,
    ``reason``, ``verdict_alone`` (the verdict of its own interval, before its controls),
    ``controls`` (the keys of the controls attached to it), ``converged`` (True/False/None),
    ``at_risk`` (the losing side did not converge) and ``losing_side``, ``schedule_bound``,
    ``waiting_for``, ``uncontrolled`` (at risk with no control: why) and ``run_keys`` (``{"a": [...],
    "b": [...]}``: the stored runs compared, which identify the comparison across chapters;
    None where unknown). NaN becomes None."""
    out = {}
    for claim, row in table.iterrows():
        diffs = [float(d) for d in row["_diffs"]]
        sd = float(np.std(diffs, ddof=1)) if len(diffs) >= 2 and all(map(math.isfinite, diffs)) else math.nan
        m = int(row["_m"])
        out[claim] = {"id": claim, "claim": row["claim"],
                      "a": {str(s): _json(v) for s, v in row["_a"].items()},
                      "b": {str(s): _json(v) for s, v in row["_b"].items()},
                      "seeds": [int(s) for s in row["_seeds"]], "diffs": [_json(d) for d in diffs],
                      "n": int(row["_n"]), "margin": _json(row["_margin"]),
                      "ci95": [_json(row["_lo"]), _json(row["_hi"])],
                      "family": row["_family"], "family_size": m,
                      "ci_family": [_json(row["_flo"]), _json(row["_fhi"])],
                      "level_family": 1 - ALPHA / m, "control_of": _text(row["_control_of"]),
                      "sd": _json(sd), "spread": _json(sd), "p": _json(row["_p"]),
                      "verdict": row["verdict"], "kind": row["kind"], "reason": row["reason"],
                      "verdict_alone": row["_verdict_alone"], "controls": list(row["_controls"]),
                      "converged": None if row["_converged"] is None else bool(row["_converged"]),
                      "at_risk": bool(row["_at_risk"]), "losing_side": _text(row["_losing"]),
                      "schedule_bound": _text(row.get("_schedule")),
                      "waiting_for": _text(row.get("_waiting")),
                      "uncontrolled": _text(row.get("_uncontrolled")),
                      "run_keys": (None if not isinstance(row["_keys"], tuple) or not any(row["_keys"])
                                   else {"a": list(row["_keys"][0]), "b": list(row["_keys"][1])})}
    return out


def display_table(table):
    """The table as a reader reads it (for the notebooks and the report): indexed by each claim's
    sentence, without its numeric helper columns."""
    shown = table.set_index("claim") if "claim" in table.columns else table
    return shown[[c for c in shown.columns if not c.startswith("_")]]


def claims_view(table, what: str = "The chapter's claims, each paired by seed"):
    """The claims table as a notebook shows it (:func:`mlpl_lab.analysis.display.styled`):
    :func:`display_table`, grouped by family, with a caption saying how to read it; its cells
    are already text (margins with two decimals, p with three)."""
    from .display import styled

    cap = (f"{what.rstrip('. ')}, grouped by family (the question each claim answers, with its "
           "size m). margin: the mean of the paired differences A − B with its family-wise "
           "interval (Bonferroni, level 1 − 0.05/m): the interval that decides the verdict; "
           f"{CI95}: the plain 95 % interval, for reference only; p: the paired t-test, "
           "unadjusted; a control sits in the family of the claim it checks, is counted in its m, "
           f"and decides with it (\"{OVERTURNED}\": the control lies on the other side of 0); "
           "converged: whether every run of the row met the convergence criterion "
           "(⚠ at risk: the losing side did not; ‡: at risk with no control).")
    return styled(display_table(table), cap, best=False)


def explain() -> str:
    """The verdict rule as Markdown (the notebooks display it rather than restate it)."""
    return (
        "**How a claim is judged.** Both sides are paired by seed (same split, same observed labels, "
        "same initialisation); only the seeds both ran count. For each seed $s$, $d_s = A_s - B_s$, "
        r"and the **margin** is $\bar d$. Each claim answers one question, its **family**, declared "
        "with the chapter's design before any run was read; a family asks its question $m$ times "
        "(one claim per regime, say), and the table prints $m$. The **family-wise interval** is "
        r"$\bar d \pm t_{1-0.05/(2m),\,n-1}\, s_d/\sqrt n$ (Student $t$, $n$ paired seeds; "
        "Bonferroni: level $1 - 0.05/m$, so all $m$ intervals of a family hold together with "
        "probability at least 95 %). It is the interval printed beside the margin, and the verdict "
        "is read off it:\n\n"
        "* **holds**: the family-wise interval lies above 0;\n"
        "* **does not hold**: it lies below 0 (the data say the opposite);\n"
        "* **inconclusive**: it contains 0, a value is missing, or every seed gives the same "
        "difference (zero spread: the interval has zero width, a point rather than evidence);\n"
        f"* **inconclusive (n seeds)**: fewer than {MIN_SEEDS} paired seeds. Such a row is an "
        "*observation* (kind column): its numbers are shown, not judged.\n\n"
        f"The {CI95} column ($m = 1$) and **p** (the paired $t$-test) are shown for reference; "
        "neither decides. A *control* (a length check, an equal-epochs control) asks its claim's "
        "question once more with what the claim left unequal made equal: it sits in that claim's "
        "family and is counted in its $m$ (declared comparisons + controls), and it decides with "
        "the claim. A claim that holds (or does not hold) on its own interval is\n\n"
        f"* **{OVERTURNED}** when the control's family-wise interval lies on the other side of 0;\n"
        f"* **{CONTROL_INCONCLUSIVE}** when the control's interval contains 0 (or it has too few "
        "seeds);\n"
        "* unchanged when the control agrees. A claim inconclusive alone stays inconclusive.\n\n"
        "`converged` says whether every run of the row met the run "
        "store's convergence criterion; **⚠ at risk** marks a verdict whose *losing* side did not "
        "converge (it was still improving, so a longer run could narrow the margin); **‡ no "
        "control** marks such a verdict that no control checks. Each claim's "
        "record holds both sides per seed and the differences, so every verdict can be recomputed "
        "from it.")


def takeaways(table) -> str:
    """The chapter's claims grouped by verdict, as Markdown computed from ``table``
    (:func:`claims_table`): what *holds*, what *does not hold*, what is *overturned by its
    control* and by which, what is *inconclusive* and why
    (the family-wise interval contains 0, too few seeds, a missing value), and which rows rest
    on runs that did not converge or are at risk. The notebooks' take-aways display this
    instead of stating outcomes."""
    groups = {HOLDS: [], FAILS: [], OVERTURNED: [], INCONCLUSIVE: []}
    controls = []
    for claim, row in table.iterrows():
        verdict = str(row["verdict"])
        key = verdict if verdict in (HOLDS, FAILS, OVERTURNED) else INCONCLUSIVE
        text = (f"*{row.get('claim', claim)}* — margin {row[CI_FAMILY]} (family-wise, m = {int(row['_m'])}), "
                f"{int(row['_n'])} paired seed(s)")
        if key in (INCONCLUSIVE, OVERTURNED):
            text += f": {row['reason'] or verdict}"
        if _text(row.get("_schedule")):
            text += f" (§ {row['_schedule']})"
        elif row.get("_converged") is False:
            text += " (†: a run of this row did not converge)"
        if row.get("_at_risk"):
            text += f" ⚠ at risk: the losing side ({row['_losing']}) did not converge"
        if _text(row.get("_waiting")):
            text += f"; waits for {row['_waiting']}"
        if _text(row.get("_uncontrolled")):
            text += f" ‡ no control: {row['_uncontrolled']}"
        if _text(row.get("_control_of")):
            parent = row["_control_of"]
            of = table.at[parent, "claim"] if parent in table.index and "claim" in table.columns else parent
            controls.append(f"{text} — {verdict}; the control of *{of}*")
            continue
        groups[key].append(text)
    heads = {HOLDS: "Holds at this scale", FAILS: "Does not hold at this scale",
             OVERTURNED: "Overturned by its control at this scale", INCONCLUSIVE: "Inconclusive at this scale"}
    n = len(table) - len(controls)
    lines = [f"**These runs' verdicts** ({n} claim(s)" + (f" and {len(controls)} control(s), each deciding "
             "with the claim it checks" if controls else "") + ", computed from the claims table above):", ""]
    for key, items in groups.items():
        lines.append(f"* **{heads[key]}** ({len(items)}):" + ("" if items else " none"))
        lines += [f"    * {t}" for t in items]
    if controls:
        lines.append(f"* **Controls** ({len(controls)}), counted in their claims' families:")
        lines += [f"    * {t}" for t in controls]
    return "\n".join(lines)
