r"""The exercises' checks, chapter by chapter (notebooks 00–08).

Three kinds: *implement a piece* — the student's function is compared with the
library's reference on random inputs; *predict, then check* — a number or a choice compared
with what the library computes (or what the run measured); *read the evidence* — an answer
compared with what the notebook's own records say (never a value typed here). Every check
prints ``✓``/``✗`` and returns a bool, and never raises (:mod:`mlpl_lab.course.exercises.core`).
"""
from __future__ import annotations

import math
from typing import Any, Callable, Mapping

import numpy as np
import torch

from .core import UNANSWERED, implement, never_raises, predict, rng, same_set, unanswered, verdict
from ...analysis.ranks import pairwise_can_reject


# ---------------------------------------------------------------------------------------
# random inputs
# ---------------------------------------------------------------------------------------
def random_observed(g: np.random.Generator, n: int, c: int, p_pos=0.2, p_neg=0.2) -> torch.Tensor:
    """An n x C matrix of 1 / 0 / -1 (observed positive / negative / unknown)."""
    u = g.random((n, c))
    out = np.full((n, c), -1, dtype=np.int64)
    out[u < p_pos] = 1
    out[(u >= p_pos) & (u < p_pos + p_neg)] = 0
    return torch.from_numpy(out)


def random_logits(g: np.random.Generator, n: int, c: int, scale: float = 3.0) -> torch.Tensor:
    return torch.from_numpy(g.normal(0.0, scale, (n, c))).float()


def _sizes(g):
    return int(g.integers(2, 9)), int(g.integers(2, 7))


# ---------------------------------------------------------------------------------------
# shared: read the claims table
# ---------------------------------------------------------------------------------------
def holding_claims(claims_record: Mapping[str, Any]) -> list:
    """The claims whose verdict says they hold, from a chapter's ``claims`` record
    (``{key: {"claim": sentence, "verdict": ...}}``), by the names the claims table shows (their
    sentences; a record without one: its key); a verdict that starts with "holds" counts."""
    out = []
    for claim, row in claims_record.items():
        v = row.get("verdict", "") if isinstance(row, Mapping) else str(row)
        if str(v).strip().lower().startswith("holds"):
            out.append(row.get("claim") or claim if isinstance(row, Mapping) else claim)
    return out


_CLAIMS = ("Exercise — which claims hold at this scale",
           "read the `verdict` column of the claims table above; copy each holding claim's name "
           "exactly, and give an empty list if none holds")


@never_raises(*_CLAIMS)
def check_claims_that_hold(answer, claims_record: Mapping[str, Any]) -> bool:
    """*Read the evidence*: ``answer`` (a list of claim names) against the claims record."""
    title, hint = _CLAIMS
    if unanswered(answer):
        return verdict(False, title, UNANSWERED, hint)
    expected = holding_claims(claims_record)
    n = len(claims_record)
    if same_set(answer, expected):
        return verdict(True, title, "your list matches the verdicts",
                       reference=f"{len(expected)} of {n} claims hold in this run")
    return verdict(False, title, f"{n} claims in the table; your list does not match their verdicts", hint)


def _argbest(values: Mapping[str, float], largest: bool = True, exclude=()) -> str:
    items = {k: float(v) for k, v in values.items() if k not in exclude and v is not None
             and math.isfinite(float(v))}
    if not items:
        raise ValueError("the record has no finite value to compare")
    return (max if largest else min)(items, key=items.get)


def tied_best(values: Mapping[str, float], largest: bool = True, exclude=()) -> list:
    """Every key of ``values`` whose value equals the largest (or smallest) one, to 1e-12
    relative: the right answers of a *pick* exercise (two regimes may share a value exactly,
    e.g. two that observe the same positives)."""
    best = _argbest(values, largest, exclude)
    target = float(values[best])
    return [k for k, v in values.items() if k not in exclude and v is not None and math.isfinite(float(v))
            and math.isclose(float(v), target, rel_tol=1e-12, abs_tol=0.0)]


def check_pick(title: str, answer, values: Mapping[str, float], hint: str, largest: bool = True,
               exclude=()) -> bool:
    """*Read the evidence*: the key of the largest (or smallest) value of a record. Where several
    keys share that value (:func:`tied_best`) each of them is right, and the ✓ names the others."""

    @never_raises(title, hint)
    def run():
        if unanswered(answer):
            return verdict(False, title, UNANSWERED, hint)
        tied = tied_best(values, largest, exclude)
        for best in tied:
            if same_set(answer, [best]):
                others = [k for k in tied if k != best]
                return verdict(True, title, "the row the record points to"
                               + (f" (tied with {', '.join(others)}: each is right)" if others else ""),
                               reference=f"{best}: {float(values[best]):.3g}")
        return verdict(False, title, "not the row the record points to", hint)

    return run()


def decided_lead(top: str, runner_up: str, claims_record: Mapping[str, Any],
                 values: Mapping[str, float] | None = None) -> bool:
    """Whether the claims record *decides* ``top``'s lead over ``runner_up``: a claim names both
    (as words of its name) and its verdict holds. With ``values`` (the record the two means come
    from) the claim must instead compare exactly those runs, in that order — its ``a`` mean is
    ``values[top]`` and its ``b`` mean ``values[runner_up]`` — so a claim on another setting (a
    longer schedule) does not decide the lead at this one, and a claim whose name shortens a row
    ("drop 75 % vs 25 %") still does. A higher mean alone decides nothing."""
    import re

    def names(claim: str, who: str) -> bool:
        return re.search(r"(?<![\w+-])" + re.escape(who) + r"(?![\w+-])", claim) is not None

    def same_runs(row) -> bool:
        if values is None:
            return True
        try:
            a = float(np.mean([float(v) for v in row["a"].values()]))
            b = float(np.mean([float(v) for v in row["b"].values()]))
        except (KeyError, TypeError, ValueError, AttributeError):
            return False
        return math.isclose(a, float(values[top]), abs_tol=1e-6) and \
            math.isclose(b, float(values[runner_up]), abs_tol=1e-6)

    def compares(c, row) -> bool:  # with the record's values, the runs decide (a claim's name may
        # shorten "drop 25 %" to "25 %"); without them, the names (its sentence)
        return same_runs(row) if values is not None else (names(c, top) and names(c, runner_up))

    def said(c, row) -> str:  # the claim as the table shows it: its sentence, else its key
        return (row.get("claim") if isinstance(row, Mapping) else None) or c

    return any(compares(said(c, row), row) and said(c, row) in holding_claims({c: row})
               for c, row in claims_record.items())


def check_lead(title: str, answer, values: Mapping[str, float], decides: Callable[[str, str], bool],
               exclude=(), largest: bool = True, what: str = "highest means",
               evidence: str = "the claims table") -> bool:
    """*Read the evidence, and its limits* — the one implementation of every "which row leads"
    exercise: ``answer = (top, runner_up, decided)`` — the row of ``values`` that leads (the largest,
    or with ``largest=False`` the smallest), the second, and whether the record's own test
    ``decides(top, runner_up)`` decides the lead. Only what the records show earns a ✓: naming the
    leader is a fact of the record, calling an undecided lead decided (or a decided one undecided)
    is a ✗ — a higher mean (or a better mean rank) alone is not a finding."""
    hint = (f"the two {what} of the record, then {evidence}: does it decide between the two? If it "
            "does not (or calls the difference inconclusive), the lead is not decided")

    @never_raises(title, hint)
    def run():
        if unanswered(answer) or not isinstance(answer, (tuple, list)) or len(answer) != 3 \
                or all(unanswered(x) for x in answer):
            return verdict(False, title, UNANSWERED + " (give top, runner_up, decided)", hint)
        ranked = sorted((k for k in values if k not in exclude and values[k] is not None
                         and math.isfinite(float(values[k]))),
                        key=lambda k: float(values[k]), reverse=largest)
        top, second = ranked[0], ranked[1]
        decided = bool(decides(top, second))
        if [answer[0], answer[1]] != [top, second]:
            return verdict(False, title, f"not the two rows with the {what}", hint)
        if bool(answer[2]) != decided:
            said = (f"{evidence} decides between them" if decided else
                    f"{evidence} does not decide between them: a lead alone is not a finding")
            return verdict(False, title, "the two rows are right, whether the lead is decided is not",
                           hint, reference=said)
        return verdict(True, title, f"decided by {evidence}" if decided else f"not decided by {evidence}",
                       reference=f"{top} {float(values[top]):.3g} vs {second} {float(values[second]):.3g}")

    return run()


def check_top_mean(title: str, answer, values: Mapping[str, float], claims_record: Mapping[str, Any],
                   exclude=()) -> bool:
    """*Read the evidence, and its limits*: ``answer = (top, runner_up, decided)`` — the row with
    the highest mean of ``values``, the second highest, and whether the claims table decides the
    top one's lead (:func:`decided_lead` on the same runs). Only what the records show earns a ✓:
    a student who calls an inconclusive lead decided gets a ✗ (:func:`check_lead`)."""
    return check_lead(title, answer, values, lambda top, second: decided_lead(top, second, claims_record, values),
                      exclude=exclude, largest=True, what="highest means", evidence="the claims table")


def _claim_measuring(row: str, claims_record: Mapping[str, Any], value: float | None = None):
    """The claim of ``claims_record`` that measures ``row`` (its name names the row as words; with
    ``value``, among several such claims the one whose mean difference is closest to it), or None."""
    import re

    named = [(c, r) for c, r in claims_record.items() if isinstance(r, Mapping)
             and re.search(r"(?<![\w+-])" + re.escape(row) + r"(?![\w+-])", c)]
    if value is not None and len(named) > 1:
        named.sort(key=lambda cr: abs(float(cr[1].get("margin") or math.inf) - float(value)))
    return named[0] if named else None


def intervals_apart(top: str, runner_up: str, claims_record: Mapping[str, Any],
                    values: Mapping[str, float] | None = None) -> bool:
    """Whether the intervals decide ``top``'s lead over ``runner_up`` where each row is measured by
    a claim of its own (chapter 01: one claim per regime, full labels against AN): the family-wise
    interval of ``top``'s claim (``ci_family``, the one that decides its verdict) lies wholly above
    ``runner_up``'s. Intervals that overlap, a claim on fewer than 3 paired seeds (the claims' own
    rule: they decide nothing) or a row no claim measures decide nothing."""
    claims = [_claim_measuring(r, claims_record, None if values is None else values.get(r)) for r in (top, runner_up)]
    if any(c is None for c in claims):
        return False
    try:
        low_top = float(claims[0][1]["ci_family"][0])
        high_next = float(claims[1][1]["ci_family"][1])
        if min(int(c[1]["n"]) for c in claims) < 3:
            return False
    except (KeyError, TypeError, ValueError, IndexError):
        return False
    return math.isfinite(low_top) and math.isfinite(high_next) and low_top > high_next


def check_top_interval(title: str, answer, values: Mapping[str, float], claims_record: Mapping[str, Any],
                       exclude=()) -> bool:
    """*Read the evidence, and its limits*: ``answer = (top, runner_up, decided)`` — the row with the
    largest value, the second, and whether their claims' family-wise intervals decide the lead
    (:func:`intervals_apart`; the rule of :func:`check_lead`)."""
    return check_lead(title, answer, values, lambda top, second: intervals_apart(top, second, claims_record, values),
                      exclude=exclude, largest=True, what="largest values",
                      evidence="the two claims' family-wise intervals")


def rank_lead_decided(top: str, runner_up: str, mean_rank: Mapping[str, float], ranks_record: Mapping[str, Any],
                      alpha: float = 0.05) -> bool:
    """Whether the rank test of the benchmark's record decides that ``top``'s mean rank is better
    than ``runner_up``'s: the rank test rejects equal ranks (its ``p``, Iman–Davenport's over
    independent data sets, or an older record's ``friedman_p``, < ``alpha``) *and* the two mean ranks
    differ by more than the Nemenyi critical difference ``cd`` (Demšar 2006: the post-hoc test only
    after the omnibus one), and a pairwise test over the record's ``N`` data sets can reject at all
    (:func:`mlpl_lab.analysis.ranks.pairwise_can_reject`). A missing test (too few methods or data sets, or ranks over label
    regimes of one data set, which are description only) decides nothing."""
    try:
        p = ranks_record["p"] if "p" in ranks_record else ranks_record["friedman_p"]
        p, cd = float(p), float(ranks_record["cd"])
        gap = abs(float(mean_rank[runner_up]) - float(mean_rank[top]))
    except (KeyError, TypeError, ValueError):
        return False
    if not (math.isfinite(p) and math.isfinite(cd)):
        return False
    methods = ranks_record.get("methods")
    if methods is not None and not (top in methods and runner_up in methods):
        return False
    n = ranks_record.get("N")
    if isinstance(n, (int, float)) and not pairwise_can_reject(int(n), alpha):
        return False  # no pairwise test over N data sets can reject at alpha (2/2^N > alpha)
    return p < alpha and gap > cd


def check_top_rank(title: str, answer, mean_rank: Mapping[str, float], ranks_record: Mapping[str, Any]) -> bool:
    """*Read the evidence, and its limits*: ``answer = (best, runner_up, decided)`` — the method
    with the best (lowest) mean rank, the second best, and whether the rank test decides between
    them (:func:`rank_lead_decided`). The same rule as :func:`check_top_mean` (:func:`check_lead`)."""
    return check_lead(title, answer, mean_rank,
                      lambda top, second: rank_lead_decided(top, second, mean_rank, ranks_record),
                      largest=False, what="best mean ranks",
                      evidence="the rank test and the Nemenyi critical difference (none over label regimes)")


# ---------------------------------------------------------------------------------------
# 00 · partial labels
# ---------------------------------------------------------------------------------------
def _an_reference(observed):
    from ...core.labels import assume_negative

    return assume_negative(observed)


def check_an_targets(student: Callable) -> bool:
    """*Implement*: ``student(observed) -> targets`` (1 / 0 / -1 in, float 0/1 out) against
    :func:`mlpl_lab.core.labels.assume_negative`."""
    g = rng(100)
    cases = [(random_observed(g, *_sizes(g)),) for _ in range(20)]
    return implement("Exercise — AN targets", student, _an_reference, cases,
                             "AN keeps what was observed as positive and calls every other entry a "
                             "negative — unknowns included", atol=0.0, rtol=0.0)


def check_hidden_share(answer, overview_row: Mapping[str, float]) -> bool:
    """*Predict, then check*: the share of true positives hidden under single positive,
    predicted from the positives per image, against the measured ``hidden positive share``."""
    hint = ("single positive keeps exactly one positive per image: how many of an image's true "
            "positives are left, on average?")
    return predict("Exercise — hidden positives under single positive", answer,
                   lambda: float(overview_row["hidden positive share"]), 0.02, hint, source="the data says")


# ---------------------------------------------------------------------------------------
# 01 · assume negative
# ---------------------------------------------------------------------------------------
def _an_loss_reference(logits, observed):
    from ...losses import an_loss

    return an_loss(logits, observed)


def check_an_loss(student: Callable) -> bool:
    """*Implement*: ``student(logits, observed) -> scalar`` against the registered ``an`` loss."""
    g = rng(101)
    cases = []
    for _ in range(20):
        n, c = _sizes(g)
        cases.append((random_logits(g, n, c), random_observed(g, n, c)))
    return implement("Exercise — the AN loss", student, _an_loss_reference, cases,
                             "binary cross-entropy with the AN targets, averaged over every entry "
                             "(N x C), not only over the observed ones")


def an_penalty(p: float) -> float:
    """The library's AN loss on one unknown entry the model scores with probability ``p``."""
    from ...losses import an_loss

    z = torch.logit(torch.tensor([[p]], dtype=torch.float64))
    return float(an_loss(z, torch.tensor([[-1]])))


def check_an_penalty(answer, p: float) -> bool:
    """*Predict, then check*: what AN charges a hidden positive the model already scores ``p``."""
    title = f"Exercise — AN's loss on a hidden positive scored p = {p:g}"
    hint = "an unknown entry is a negative for AN: which BCE term applies, and what is its value at this p?"
    return predict(title, answer, lambda: an_penalty(p), 1e-3, hint)


# ---------------------------------------------------------------------------------------
# 02 · GR Loss
# ---------------------------------------------------------------------------------------
def _gr_cases(seed: int, n: int = 20):
    g = rng(seed)
    out = []
    for _ in range(n):
        p = torch.from_numpy(g.random(int(g.integers(3, 30)))).float()
        out.append((p, float(g.normal(3, 4)), float(g.normal(-2, 2)), float(g.random()),
                    float(g.uniform(0.2, 3))))
    return out


def check_gr_pieces(k_hat: Callable, v: Callable) -> bool:
    """*Implement*: ``k_hat(p, w, b)`` (Eq. 7) and ``v(p, mu, sigma)`` (Eq. 11) against
    :func:`mlpl_lab.losses.gr.k_hat` and :func:`~mlpl_lab.losses.gr.v_weight`."""
    from ...losses import gr

    hint = ("k̂ is a sigmoid of a line in p (Eq. 7); v is a Gaussian bump centred at μ with width σ, "
            "not normalised (Eq. 11)")
    cases = _gr_cases(102)
    ok_k = implement("Exercise — GR's k̂", _adapt(k_hat, "k") if callable(k_hat) else k_hat,
                             lambda p, w, b, mu, s: gr.k_hat(p, w, b), cases, hint)
    ok_v = implement("Exercise — GR's v", _adapt(v, "v") if callable(v) else v,
                             lambda p, w, b, mu, s: gr.v_weight(p, mu, s), cases, hint)
    return ok_k and ok_v


def _adapt(fn: Callable, which: str) -> Callable:
    """The student writes k_hat(p, w, b) and v(p, mu, sigma); the cases carry all five."""
    if which == "k":
        return lambda p, w, b, mu, s: fn(p, w, b)
    return lambda p, w, b, mu, s: fn(p, mu, s)


def k_hat_crossing(w: float, b: float) -> float | None:
    """Where the library's k̂(p; w, b) crosses 0.5 for p in [0, 1], by bisection on
    :func:`mlpl_lab.losses.gr.k_hat`; ``None`` when it stays on one side."""
    from ...losses.gr import k_hat

    f = lambda p: float(k_hat(torch.tensor(p, dtype=torch.float64), w, b)) - 0.5  # noqa: E731
    lo, hi = 0.0, 1.0
    if f(lo) * f(hi) > 0:
        return None
    for _ in range(60):
        mid = (lo + hi) / 2
        if f(lo) * f(mid) <= 0:
            hi = mid
        else:
            lo = mid
    return (lo + hi) / 2


def check_k_crossing(answer, w: float, b: float) -> bool:
    """*Predict, then check*: the confidence p at which k̂(p; w, b) = 0.5 (``None`` if it does
    not cross inside [0, 1])."""
    title = f"Exercise — where k̂ crosses 0.5 at w = {w:g}, b = {b:g}"
    hint = "k̂ = 0.5 exactly where the sigmoid's argument is zero; then check it on the panel's k̂ curve"

    @never_raises(title, hint)
    def run():
        expected = k_hat_crossing(w, b)
        if unanswered(answer):
            return verdict(False, title, UNANSWERED, hint)
        if expected is None:
            ok = isinstance(answer, str) and answer.strip().lower() in ("never", "none")
            return verdict(ok, title, "k̂ stays on one side of 0.5 on [0, 1]" if ok else
                           "not where the library's k̂ crosses 0.5", hint,
                           reference="" if ok else "k̂ does not cross 0.5 inside [0, 1]: the answer is 'never'")
        return predict(title, answer, lambda: expected, 0.01, hint)

    return run()


def _unknown_gradient_reference(z, w, b, q2, q3):
    """∂L/∂z of GR Loss on unknown entries, by autograd of the library's loss (v switched off)."""
    from ...losses.gr import gr_loss

    z = z.clone().double().requires_grad_(True)
    labels = torch.full(z.shape, -1, dtype=torch.long)
    gr_loss(z, labels, w=w, b=b, mu=None, sigma=None, q2=q2, q3=q3, reduction="sum").backward()
    return z.grad


def check_unknown_gradient(student: Callable) -> bool:
    """*Implement*: ``student(p, k, q2, q3) -> g`` (Eq. 18, v = 1) against autograd of the
    library's ``gr`` loss on unknown labels."""
    from ...losses.gr import k_hat

    g = rng(103)
    cases = []
    for _ in range(15):
        z = torch.from_numpy(g.normal(0, 2.5, int(g.integers(3, 20)))).double()[None, :]
        w, b = float(g.normal(4, 3)), float(g.normal(-3, 2))
        q2, q3 = float(g.uniform(0.01, 1)), float(g.uniform(0.05, 1.5))
        cases.append((z, w, b, q2, q3))

    def student_on(z, w, b, q2, q3):
        p = torch.sigmoid(z)
        return student(p, k_hat(p, w, b), q2, q3)

    return implement("Exercise — the gradient on an unknown label (Eq. 18)", student_on,
                             _unknown_gradient_reference, cases,
                             "differentiate k̂·L2 + (1 − k̂)·L3 with respect to the logit z, holding k̂ "
                             "fixed (its p is detached), and use dp/dz = p(1 − p)")


# ---------------------------------------------------------------------------------------
# 03 · OPML
# ---------------------------------------------------------------------------------------
def _opml_reference(logits, observed, alpha, beta):
    from ...losses.opml import opml_loss

    return opml_loss(logits, observed, alpha=alpha, beta=beta, reduction="none")


def check_opml_pair_term(student: Callable) -> bool:
    """*Implement*: ``student(logits, observed, alpha, beta) -> (N,)`` per-sample losses against
    :func:`mlpl_lab.losses.opml.opml_loss` (``reduction="none"``)."""
    g = rng(104)
    cases = []
    for _ in range(20):
        n, c = _sizes(g)
        cases.append((random_logits(g, n, c), random_observed(g, n, c, p_pos=0.3),
                      float(g.uniform(0.2, 3)), float(g.uniform(0.2, 3))))
    return implement("Exercise — OPML's pair term (Eq. 3/6)", student, _opml_reference, cases,
                             "one log-sum-exp over the assumed negatives' scores and one over the "
                             "positives' negated scores, each with its constant inside the log; a row "
                             "without positives keeps only its negative term")


def zlpr_positive_gradient(s_p: float, n_negatives: int = 5, seed: int = 0) -> float:
    """∂L/∂s_p of ZLPR (OPML at α = β = 1) for a row with one positive scored ``s_p``, by
    autograd of the library's loss (the negatives' scores are random: they do not matter)."""
    from ...losses.opml import zlpr_loss

    g = rng(seed)
    z = torch.tensor([[s_p] + list(g.normal(0, 2, n_negatives))], dtype=torch.float64, requires_grad=True)
    labels = torch.tensor([[1] + [-1] * n_negatives])
    zlpr_loss(z, labels, reduction="sum").backward()
    return float(z.grad[0, 0])


def check_positive_gradient(answer, s_p: float) -> bool:
    """*Predict, then check*: the gradient of ZLPR on a single positive scored ``s_p``."""
    title = f"Exercise — the gradient on a single positive at s_p = {s_p:g}"
    hint = "with one positive the positive term is log(1 + e^(−s_p)); differentiate it, then compare with BCE's"
    return predict(title, answer, lambda: zlpr_positive_gradient(s_p), 1e-3, hint)


# ---------------------------------------------------------------------------------------
# 04 · CLS
# ---------------------------------------------------------------------------------------
def _cross_selection_reference(peer_loss, observed, R_h):
    from ...methods.selection import co_label_selection

    sel = co_label_selection(peer_loss, peer_loss, observed, R_h, 1.0)
    return (sel.kept | sel.removed_low).to(torch.float64)


def check_cross_selection(student: Callable) -> bool:
    """*Implement*: ``student(peer_loss, observed, R_h) -> bool mask`` of the unknown entries
    kept for training (Eq. 1) against :func:`mlpl_lab.methods.selection.co_label_selection`."""
    g = rng(105)
    cases = []
    for _ in range(20):
        n, c = _sizes(g)
        cases.append((torch.from_numpy(g.exponential(1.0, (n, c))).float(),
                      random_observed(g, n, c, p_pos=0.2, p_neg=0.1), float(g.uniform(0.3, 0.95))))

    def as_float(peer_loss, observed, R_h):
        got = student(peer_loss, observed, R_h)
        return None if got is None else torch.as_tensor(got).to(torch.float64)

    return implement("Exercise — CLS's cross selection (Eq. 1)", as_float,
                             _cross_selection_reference, cases,
                             "only unknown entries are candidates; rank them by the peer's loss all "
                             "together (not per row) and keep the floor(R_h·n) smallest", atol=0.0, rtol=0.0)


def kept_count(n_unknown: int, R_h: float, R_l: float, seed: int = 0) -> int:
    """How many of ``n_unknown`` unknown entries CLS trains as negatives at (R_h, R_l), counted
    on the library's selection of random losses."""
    from ...methods.selection import co_label_selection

    g = rng(seed)
    observed = torch.full((1, n_unknown), -1)
    own, peer = (torch.from_numpy(g.random((1, n_unknown))) for _ in range(2))
    return int(co_label_selection(own, peer, observed, R_h, R_l).kept.sum())


def check_kept_count(answer, n_unknown: int, R_h: float, R_l: float) -> bool:
    """*Predict, then check*: the number of unknown labels kept as negatives after both steps."""
    title = f"Exercise — unknown labels kept of {n_unknown} at R_h = {R_h:g}, R_l = {R_l:g}"
    hint = "the two steps apply one after the other, each keeping a rounded-down share of what it is given"

    return predict(title, answer, lambda: kept_count(n_unknown, R_h, R_l), 0, hint)


# ---------------------------------------------------------------------------------------
# 05 · LAC
# ---------------------------------------------------------------------------------------
def _plc_reference(weak_probs, observed, delta):
    from ...losses.lac import plc_targets

    target, mask = plc_targets(weak_probs, observed, delta, form="paper")
    return target.to(torch.float64), mask.to(torch.float64)


def check_plc_selection(student: Callable) -> bool:
    """*Implement*: ``student(weak_probs, observed, delta) -> (targets, mask)`` against
    :func:`mlpl_lab.losses.lac.plc_targets` (the paper's form)."""
    g = rng(106)
    cases = []
    for _ in range(20):
        n, c = _sizes(g)
        cases.append((torch.from_numpy(g.random((n, c))).float(), random_observed(g, n, c),
                      float(g.uniform(0.5, 0.98))))

    def as_float(weak_probs, observed, delta):
        got = student(weak_probs, observed, delta)
        if got is None:
            return None
        t, m = got
        return torch.as_tensor(t).to(torch.float64), torch.as_tensor(m).to(torch.float64)

    return implement("Exercise — PLC's selection (Eq. 4)", as_float, _plc_reference, cases,
                             "only unknown entries take pseudo-labels; a confident weak view (p ≥ δ or "
                             "p ≤ 1 − δ) selects the entry, and its target says which side",
                             atol=0.0, rtol=0.0)


def ignored_share(weak_probs, observed, delta: float) -> float:
    """The share of unknown entries PLC leaves out at ``delta`` (library's selection)."""
    from ...losses.lac import plc_targets

    _, mask = plc_targets(weak_probs, observed, delta, form="paper")
    unknown = observed == -1
    return float((unknown & ~mask).sum()) / max(int(unknown.sum()), 1)


def check_ignored_share(answer, weak_probs, observed, delta: float) -> bool:
    """*Predict, then check*: the share of unknown labels PLC ignores at ``delta`` on the given
    predictions (the panel's images)."""
    title = f"Exercise — unknown labels PLC ignores at δ = {delta:g}"
    hint = "an unknown entry is ignored when 1 − δ < p < δ: how wide is that band at this δ?"
    return predict(title, answer, lambda: ignored_share(weak_probs, observed, delta), 0.05, hint)


# ---------------------------------------------------------------------------------------
# 06 · PU-MLC
# ---------------------------------------------------------------------------------------
def _vpu_class_reference(logits, observed, c, alpha, gamma):
    from ...losses.pu import vpu_loss

    return vpu_loss(logits, observed, alpha=alpha, gamma=gamma, reduction="none")[c]


def check_vpu_class(student: Callable) -> bool:
    """*Implement*: ``student(logits, observed, c, alpha, gamma) -> L_c`` against
    :func:`mlpl_lab.losses.pu.vpu_loss` (``reduction="none"``)."""
    g = rng(107)
    cases = []
    for _ in range(20):
        n, c = int(g.integers(6, 20)), int(g.integers(2, 6))
        obs = random_observed(g, n, c, p_pos=0.3)
        obs[0, :] = 1  # every class has a positive in the batch
        cases.append((random_logits(g, n, c, 2.0), obs, int(g.integers(0, c)),
                      float(g.uniform(0.3, 2)), float(g.uniform(0, 1))))
    return implement("Exercise — the vPU risk of one class (Eq. 8–10)", student,
                             _vpu_class_reference, cases,
                             "temper the logits by T_c = min(α·std, 1) (population std), weight the log of "
                             "the batch-mean tempered probability by (mean untempered p)^γ, and subtract the "
                             "mean log tempered probability of the observed positives", atol=1e-4)


def rebalance_direction(logits, gamma_from: float, gamma_to: float) -> str:
    """"up" / "down" / "same": how the re-balance weights (mean p)^γ of most classes move
    from ``gamma_from`` to ``gamma_to`` on these logits."""
    p = torch.sigmoid(torch.as_tensor(logits, dtype=torch.float64)).mean(0)
    delta = p ** gamma_to - p ** gamma_from
    up, down = int((delta > 1e-12).sum()), int((delta < -1e-12).sum())
    return "up" if up > down else "down" if down > up else "same"


def check_rebalance_direction(answer, logits, gamma_from: float, gamma_to: float) -> bool:
    """*Predict, then check* (with the panel's γ slider): do the weights w_c go up or down?"""
    title = f"Exercise — the re-balance weights from γ = {gamma_from:g} to γ = {gamma_to:g}"
    hint = "w_c = (mean p)^γ and the mean probability lies between 0 and 1; what does a larger power do there?"

    @never_raises(title, hint)
    def run():
        if unanswered(answer):
            return verdict(False, title, UNANSWERED, hint)
        expected = rebalance_direction(logits, gamma_from, gamma_to)
        ok = same_set(answer, [expected])
        return verdict(ok, title, f"most classes' w_c go {expected}" if ok else
                       "not the way most weights move (answer 'up', 'down' or 'same')", hint)

    return run()


# ---------------------------------------------------------------------------------------
# 07 · benchmark: a paired verdict read off its family-wise interval
# ---------------------------------------------------------------------------------------
def paired_t_reference(a, b, m: int = 1):
    """(low, high, verdict) of the paired differences a − b in a family of ``m`` claims: the
    t-interval of their mean at level 1 − 0.05/m (Bonferroni; ``scipy.stats.t.interval`` with
    n − 1 degrees of freedom and the standard error sd/√n), and "holds" when it lies above 0,
    "does not hold" below 0, else "inconclusive"; below 3 seeds the interval is shown (two seeds)
    and the verdict is "inconclusive" whatever it says (the claims tables' rule)."""
    from scipy import stats

    d = np.asarray(a, dtype=float) - np.asarray(b, dtype=float)
    n = d.size
    if n < 2:
        return math.nan, math.nan, "inconclusive"
    low, high = stats.t.interval(1 - 0.05 / m, n - 1, loc=d.mean(), scale=d.std(ddof=1) / math.sqrt(n))
    v = "inconclusive" if n < 3 else "holds" if low > 0 else "does not hold" if high < 0 else "inconclusive"
    return float(low), float(high), v


_PAIRED = ("Exercise — a paired verdict read off its family-wise interval",
           "pair the seeds, take the differences, use their sample standard deviation over √n and the "
           "t quantile with n − 1 degrees of freedom at level 1 − 0.05/m; the verdict reads the "
           "interval's sign, and fewer than 3 seeds decide nothing")


@never_raises(*_PAIRED)
def check_paired_t(student: Callable) -> bool:
    """*Implement*: ``student(a, b, m) -> (low, high, verdict)`` against scipy."""
    title, hint = _PAIRED
    if not callable(student):
        return verdict(False, title, UNANSWERED, hint)
    g = rng(108)
    verdicts = set()
    # two seeds 10 points apart: an interval clear of 0 that still decides nothing
    cases = [(np.array([80.0, 80.5]), np.array([70.0, 70.0]), 1)]
    for case in range(30):
        n = int(g.integers(2, 8))
        shift = (-3.0, 0.0, 3.0)[case % 3]
        a = g.normal(70, 5, n)
        cases.append((a, a - shift - g.normal(0, 1.5, n), (1, 3, 23)[(case // 3) % 3]))
    for case, (a, b, m) in enumerate(cases):
        n = len(a)
        got = student(list(a), list(b), m)
        if unanswered(got):
            return verdict(False, title, "your function returned None: " + UNANSWERED, hint)
        low, high, v = got
        want = paired_t_reference(a, b, m)
        verdicts.add(want[2])
        if not (abs(float(low) - want[0]) < 1e-6 and abs(float(high) - want[1]) < 1e-6):
            return verdict(False, title, f"case {case + 1} (n = {n}, m = {m}): the interval differs", hint)
        if str(v).strip().lower() != want[2]:
            return verdict(False, title, f"case {case + 1} (n = {n}, m = {m}): the interval is right, "
                           "the verdict is not", hint)
    return verdict(True, title, f"matches scipy.stats.t.interval on {len(cases)} cases ({len(verdicts)} kinds of verdict)")


# ---------------------------------------------------------------------------------------
# 08 · side information and label sets
# ---------------------------------------------------------------------------------------
def _conformal_reference(scores, alpha):
    from ...analysis.conformal import conformal_quantile

    return torch.tensor(conformal_quantile(np.asarray(scores, dtype=float), float(alpha)), dtype=torch.float64)


def check_conformal_threshold(student: Callable) -> bool:
    """*Implement*: ``student(scores, alpha) -> t``, the ⌈(n + 1)(1 − α)⌉-th smallest score (inf
    when that rank exceeds n), against :func:`mlpl_lab.analysis.conformal.conformal_quantile`."""
    g = rng(108)
    cases = []
    for n in (1, 4, 9, 10, 19, 37):
        for alpha in (0.05, 0.1, 0.2, 0.5):
            cases.append((torch.as_tensor(g.uniform(0, 1, n)), alpha))

    def wrapped(scores, alpha):
        return torch.as_tensor(float(student(scores, alpha)), dtype=torch.float64)

    return implement("Exercise — the class-wise conformal threshold", wrapped, _conformal_reference, cases,
                     "sort the n scores and take the one at rank ⌈(n + 1)(1 − α)⌉ (1-based); when that rank "
                     "exceeds n, every label passes: return infinity", atol=1e-12)


def prior_ratio(scores, positive_scores, z: float) -> float:
    """q̂(z) / q̂^p(z) of Eq. 2: the share of all scores at or above ``z`` over the share of the
    observed positives' scores at or above it."""
    s, sp = np.asarray(scores, dtype=float), np.asarray(positive_scores, dtype=float)
    return float((s >= z).mean() / (sp >= z).mean())


def check_prior_ratio(answer, scores, positive_scores, z: float) -> bool:
    """*Predict, then check*: the prior estimate q̂(z)/q̂^p(z) at threshold ``z``."""
    return predict(f"Exercise — Crisp's prior estimate at the threshold z = {z:g}", answer,
                   lambda: prior_ratio(scores, positive_scores, z), 1e-6,
                   "count the scores at or above z among all images and among the observed positives; "
                   "divide the two shares")


CHECKS = {
    "00": ("check_hidden_share", "check_an_targets", "check_pick"),
    "01": ("check_an_loss", "check_an_penalty", "check_top_interval", "check_claims_that_hold"),
    "02": ("check_gr_pieces", "check_k_crossing", "check_unknown_gradient", "check_top_mean",
           "check_claims_that_hold"),
    "03": ("check_opml_pair_term", "check_positive_gradient", "check_top_mean", "check_claims_that_hold"),
    "04": ("check_cross_selection", "check_kept_count", "check_top_mean", "check_claims_that_hold"),
    "05": ("check_plc_selection", "check_ignored_share", "check_claims_that_hold"),
    "06": ("check_vpu_class", "check_rebalance_direction", "check_claims_that_hold"),
    "07": ("check_paired_t", "check_top_rank", "check_claims_that_hold"),
    "08": ("check_prior_ratio", "check_conformal_threshold", "check_claims_that_hold"),
}
"""Which checks each notebook's exercises call (the tests read it to count them)."""
