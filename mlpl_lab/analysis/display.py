"""The one table style of the notebooks: every table a notebook shows goes through :func:`styled`.

:func:`styled` formats a *copy* for display (a pandas ``Styler``, rendered as HTML in JupyterLab,
in the nbconvert reports and in the book); the frame it is given keeps its numbers at full
precision, and so do the records, claims and CSV exports, which never read the display.

The style, as papers print their tables:

* **mAP, F1 and AP** (already in percent, 0–100) and differences of them: one decimal
  (:data:`PERCENT_DIGITS`);
* **a mean over seeds** with its **95 % interval and seed count**: ``"23.8 ± 7.3 (2)"``, the
  half-width t(0.975, n − 1) · s / √n (Student t, s the sample standard deviation, ddof = 1) and
  n seeds; ``"23.8 (1 seed)"`` where one seed gives no interval (:func:`interval_text`);
* a ``†`` after a cell one of whose runs did not converge (:data:`UNCONVERGED`,
  :mod:`mlpl_lab.core.convergence`), a ``§`` instead where every such run is *schedule-bound*
  (:data:`SCHEDULE_BOUND`: its targets move until the last epoch by design);
* **counts and epochs** as integers; other real numbers (shares, rates, confidences, ratios,
  seconds) with :data:`DECIMALS` decimals; yes / no as ✓ / ✗; a missing value as ``—``;
* **the best value** of each compared column (or row) **in bold**, reference rows such as the
  full-label oracle left out of the comparison; where the cells have intervals, every cell tied
  with the best is bold too — its mean lies within the best cell's 95 % interval or the best's
  mean within its own (no difference at this many seeds) —, without intervals the cells equal to
  the best at the shown precision;
* **a caption** saying what the numbers are.

No value a table shows carries more than :data:`MAX_DECIMALS` decimals (p-values have three; a
prose cell may quote a paper's setting); ``tests/test_table_style.py`` checks an executed notebook.
"""
from __future__ import annotations

import math
import numbers
import re
from typing import Any, Callable, Iterable, Mapping, Optional, Sequence, Union

import numpy as np

PERCENT_DIGITS = 1   # mAP, F1, AP (0–100) and their differences
DECIMALS = 2         # any other real number
P_DIGITS = 3         # p-values
MAX_DECIMALS = 3     # the most decimals any displayed number carries
UNCONVERGED = " †"   # after a cell one of whose runs did not converge
SCHEDULE_BOUND = " §"  # after a cell whose unconverged runs are all schedule-bound (GR: Eq. 9–13)
MISSING = "—"
BOLD = "font-weight: bold"

#: column names read as percentages of a metric (mAP, CF1, OF1, AP, "(%)")
_PERCENT = re.compile(r"mAP|(?<![A-Za-z])[CO]?F1(?![0-9])|(?<![A-Za-z])AP(?![A-Za-z])|\(%\)")
#: column names read as counts or epochs
_COUNT = re.compile(r"^(seeds?|epochs?|best[ _]epochs?|runs|pairs|n|k|N|images|classes|count)$"
                    r"|\((k|N|n)\)$|^(n|number of) ", re.IGNORECASE)
#: names of columns that hold a difference, a spread or a rank (shown, never bolded as "best")
_NOT_BEST = re.compile(r"gap|margin|−| - |Δ|minus|\bvs\b|\bsd\b|std|±|rank|diff", re.IGNORECASE)

Kind = str  # "percent" | "count" | "real" | "p" | "text"


def _name(key: Any) -> str:
    return " ".join(map(str, key)) if isinstance(key, tuple) else str(key)


def _missing(v: Any) -> bool:
    if v is None:
        return True
    if isinstance(v, float) or isinstance(v, np.floating):
        return not math.isfinite(float(v))
    try:
        import pandas as pd

        return v is pd.NA or v is pd.NaT
    except ImportError:  # pragma: no cover
        return False


def _is_number(v: Any) -> bool:
    return isinstance(v, numbers.Real) and not isinstance(v, (bool, np.bool_))


def number_text(v: Any, kind: Kind = "real", digits: int | None = None) -> str:
    """One value as the style shows it: ``kind`` "percent" (one decimal), "count" (integer),
    "p" (three decimals, ``< 0.001`` below), "real" (``digits``, default :data:`DECIMALS`);
    bools as ✓ / ✗, missing values as ``—``, text unchanged, lists joined by commas."""
    if isinstance(v, (bool, np.bool_)):
        return "✓" if v else "✗"
    if _missing(v):
        return MISSING
    if isinstance(v, (list, tuple)):
        return ", ".join(number_text(x, kind, digits) for x in v)
    if not _is_number(v):
        return str(v)
    x = float(v)
    if kind == "count":
        return f"{int(round(x)):d}" if digits is None else f"{x:.{digits}f}"
    if kind == "p":
        return "< 0.001" if x < 0.001 else f"{x:.{P_DIGITS}f}"
    d = digits if digits is not None else (PERCENT_DIGITS if kind == "percent" else DECIMALS)
    return f"{x:.{min(d, MAX_DECIMALS)}f}"


def interval_text(mean: float, half: float = math.nan, n: Optional[int] = None,
                  unconverged: bool = False, digits: int = PERCENT_DIGITS) -> str:
    """``"mean ± half-width (n)"`` (``"mean (1 seed)"`` without an interval; ``"—"`` without a
    mean), with :data:`UNCONVERGED` after it when a run of the cell did not converge."""
    if _missing(mean):
        return MISSING
    if _missing(half):
        text = f"{float(mean):.{digits}f}" + (f" ({int(n)} seed{'s' if int(n) != 1 else ''})"
                                              if n is not None and not _missing(n) else "")
    else:
        text = f"{float(mean):.{digits}f} ± {float(half):.{digits}f}" + (
            f" ({int(n)})" if n is not None and not _missing(n) else "")
    if isinstance(unconverged, str) and unconverged == "schedule-bound":
        return text + SCHEDULE_BOUND
    return text + (UNCONVERGED if unconverged is True or isinstance(unconverged, np.bool_) and unconverged
                   else "")


def column_kind(name: Any, values) -> Kind:
    """The kind :func:`styled` infers for a column from its name and values: "percent" for
    mAP / F1 / AP / "(%)" names, "count" for integer columns and names such as seeds, epochs,
    runs, pairs, "real" for other numbers, "text" otherwise."""
    import pandas as pd

    s = pd.Series(values)
    numeric = [v for v in s if _is_number(v) and not _missing(v)]
    if not numeric:
        return "text"
    text = _name(name)
    if _COUNT.search(text):
        return "count"
    if _PERCENT.search(text):
        return "percent"
    if pd.api.types.is_integer_dtype(s.dtype) and not pd.api.types.is_bool_dtype(s.dtype):
        return "count"
    return "real"


def _as_frame(x, like):
    """``x`` (a frame or None) aligned with ``like`` (NaN where it has no value)."""
    import pandas as pd

    if x is None:
        return pd.DataFrame(np.nan, index=like.index, columns=like.columns, dtype=object)
    if not isinstance(x, pd.DataFrame):
        raise TypeError(f"half, seeds and unconverged are frames aligned with the table, not "
                        f"{type(x).__name__}; build one with the table's index and columns")
    return x.reindex(index=like.index, columns=like.columns).astype(object)


def _select(labels: Sequence[Any], which) -> list:
    if which is True:
        return list(labels)
    if not which:
        return []
    which = [which] if isinstance(which, (str, tuple)) else list(which)
    return [k for k in labels if k in which]


def styled(frame, caption: str, *, percent: Union[bool, Iterable[Any], None] = None,
           counts: Iterable[Any] | None = None, digits: Mapping[Any, int] | None = None,
           p_values: Iterable[Any] = (), half=None, seeds=None, unconverged=None,
           best: Union[bool, Iterable[Any], None] = None, axis: int = 0,
           lower_is_better: Iterable[Any] = (), reference: Iterable[Any] = (),
           formatters: Mapping[Any, Callable[[Any], str]] | None = None, bold=None):
    """``frame`` in the lab's table style (module docstring), as a pandas ``Styler`` with
    ``caption``. ``frame`` itself is not changed.

    * ``percent``: the columns shown as percentages (one decimal) — True for every numeric
      column; default: inferred from the names (:func:`column_kind`). ``counts``: columns shown
      as integers (default inferred), ``digits``: ``{column: decimals}`` for "real" columns,
      ``p_values``: columns of p-values, ``formatters``: ``{column: function}`` for anything else.
    * ``half``, ``seeds``, ``unconverged``: frames with ``frame``'s index and some of its
      columns, holding the 95 % half-width, the seed count and whether a run of the cell did not
      converge (True: a † follows); the columns they cover are shown as :func:`interval_text`.
    * ``best``: the columns (``axis=0``) or rows (``axis=1``) whose best value is bold — True for
      every one, False / [] for none; default: the percent columns that are not differences,
      spreads or ranks (``axis=0``), every row (``axis=1``). ``lower_is_better``: those whose
      best is the smallest. ``reference``: rows (``axis=0``) or columns (``axis=1``) shown but
      left out of the comparison (the full-label oracle). ``bold``: a frame of booleans with
      ``frame``'s labels saying which cells are bold, computed by the caller (e.g. from a paired
      test: :func:`mlpl_lab.analysis.benchmark.paired_best`); it replaces ``best``."""
    import pandas as pd

    if not isinstance(frame, pd.DataFrame):
        frame = pd.DataFrame(frame)
    half_f, seeds_f, conv_f = _as_frame(half, frame), _as_frame(seeds, frame), _as_frame(unconverged, frame)
    given = [x for x in (half, seeds, unconverged) if x is not None]
    interval_cols = [c for c in frame.columns if any(c in x.columns for x in given)]
    kinds = {c: column_kind(c, frame[c]) for c in frame.columns}
    for c in _select(frame.columns, percent if percent is not None else []):
        if kinds[c] != "text" or c in interval_cols:
            kinds[c] = "percent"
    for c in _select(frame.columns, counts or []):
        kinds[c] = "count"
    for c in _select(frame.columns, p_values):
        kinds[c] = "p"
    digits = dict(digits or {})
    formatters = dict(formatters or {})

    shown = pd.DataFrame(index=frame.index, columns=frame.columns, dtype=object)
    for c in frame.columns:
        for r in frame.index:
            v = frame.at[r, c] if frame.index.is_unique and frame.columns.is_unique else frame.loc[r, c]
            if c in formatters:
                shown.at[r, c] = formatters[c](v)
            elif c in interval_cols and _is_number(v):
                flag = conv_f.at[r, c]
                shown.at[r, c] = interval_text(v, half_f.at[r, c], seeds_f.at[r, c],
                                               flag if flag == "schedule-bound" else
                                               bool(flag) if isinstance(flag, (bool, np.bool_)) else False,
                                               digits.get(c, PERCENT_DIGITS if kinds[c] != "real" else DECIMALS))
            else:
                shown.at[r, c] = number_text(v, kinds[c], digits.get(c))

    css = pd.DataFrame("", index=frame.index, columns=frame.columns)
    lower = set(_select(frame.columns if axis == 0 else frame.index, lower_is_better))
    if bold is not None:
        marks = _as_frame(bold, frame)
        for r in frame.index:
            for c in frame.columns:
                if marks.at[r, c] is True or (isinstance(marks.at[r, c], np.bool_) and marks.at[r, c]):
                    css.at[r, c] = BOLD
    elif axis == 0:
        if best is None:
            compared = [c for c in frame.columns if kinds[c] == "percent" and not _NOT_BEST.search(_name(c))]
        else:
            compared = _select(frame.columns, best)
        keep = [r for r in frame.index if r not in set(reference)]
        for c in compared:
            for r in _best_cells(frame.loc[keep, c], half_f.loc[keep, c], shown.loc[keep, c], c in lower):
                css.at[r, c] = BOLD
    else:
        compared = _select(frame.index, True if best is None else best)
        keep = [c for c in frame.columns if c not in set(reference) and kinds[c] != "text"]
        for r in compared:
            for c in _best_cells(frame.loc[r, keep], half_f.loc[r, keep], shown.loc[r, keep], r in lower):
                css.at[r, c] = BOLD

    numeric_cols = [c for c in frame.columns if kinds[c] != "text" or c in interval_cols]
    # the axes' names in words too (``fn_rate`` over the row labels reads "fn rate")
    shown.index.names = [None if n is None else header_words(n) for n in shown.index.names]
    shown.columns.names = [None if n is None else header_words(n) for n in shown.columns.names]
    st = shown.style.set_caption(caption).apply(lambda _: css, axis=None)
    st = st.set_table_styles([
        {"selector": "caption", "props": "caption-side: top; text-align: left; font-size: 0.95em; "
                                         "padding-bottom: 0.4em; color: inherit;"},
        {"selector": "th", "props": "text-align: left;"}])
    if numeric_cols:
        st = st.set_properties(subset=pd.IndexSlice[:, numeric_cols], **{"text-align": "right"})
    for ax in (0, 1):  # labels that are numbers (a grid's values): as written, never 0.012000;
        st = st.format_index(_label_text, axis=ax)  # names in words (header_words), never snake_case
    return st


#: record keys and code names -> the words a table header or an axis label shows (the records
#: keep the keys; only the display reads these)
WORDS = {
    "val_mAP": "validation mAP (%)", "test_mAP": "test mAP (%)", "train_mAP": "training mAP (%)",
    "val_CF1": "validation CF1 (%)", "test_CF1": "test CF1 (%)", "val_OF1": "validation OF1 (%)",
    "test_OF1": "test OF1 (%)", "peak_memory_mib": "peak memory (MiB)", "seconds_vs_AN": "time vs AN (×)",
    "memory_vs_AN": "peak memory vs AN (×)", "train_seconds": "training time (s)",
    "epoch_seconds": "time per epoch (s)", "mean_rank": "mean rank", "tau_h": "τ_h", "tau_l": "τ_l",
    "train_ap_mean": "mean AP of the training predictions (0–1)", "used_f": "samples used by f",
    "used_g": "samples used by g", "disagree_fraction": "share of the batch in disagreement",
    "branch_empty": "steps without disagreement (share)", "branch_disagree": "steps on the disagreement (share)",
    "train_frequency": "share of training images", "lac_an_ratio": "LAC / AN loss ratio",
    "lac_contrast_pairs": "contrastive pairs per batch", "mu": "μ", "sigma": "σ",
    "tau_h_mAP": "test mAP (%) per τ_h", "tau_l_mAP": "test mAP (%) per τ_l",
    "an_false_negative_rate": "AN false-negative rate", "num_classes": "classes",
}
_SNAKE = re.compile(r"^[A-Za-z][A-Za-z0-9.]*(_[A-Za-z0-9.]+)+$")


def header_words(name: Any) -> str:
    """A column or row name as a reader reads it: :data:`WORDS` for the keys it knows, else a
    snake_case key with its underscores as spaces (``share_below_0.1`` -> ``share below 0.1``);
    a name with a one-letter part (``R_h``, ``E_k``: a symbol's subscript) is kept; inside a longer
    name, ``tau_h``/``tau_l`` read τ_h/τ_l and a snake_case word pair its words (``fn_rate 0.1``
    -> ``fn rate 0.1``)."""
    text = str(name)
    if text in WORDS:
        return WORDS[text]
    if _SNAKE.match(text) and all(len(part) > 1 for part in text.split("_")):
        return text.replace("_", " ")
    text = re.sub(r"\btau_([hl])\b", r"τ_\1", text)
    return re.sub(r"\b([a-z]{2,})_(?=[a-z]{2,}\b)", r"\1 ", text)


def _label_text(v: Any) -> str:
    """A row or column label: a number as short as it is exact (``0.012``, ``0.55``, ``1``), a
    name in words (:func:`header_words`)."""
    if _is_number(v) and not _missing(v):
        x = float(v)
        return str(int(x)) if x.is_integer() else f"{x:g}"
    return header_words(v)


def _best_cells(values, halves, shown, lower: bool) -> list:
    """Labels of the best value of ``values`` and of those tied with it (module docstring)."""
    vals = {k: float(v) for k, v in values.items() if _is_number(v) and not _missing(v)}
    if len(vals) < 2:
        return []
    top = min(vals, key=vals.get) if lower else max(vals, key=vals.get)
    def h(k):
        x = halves.get(k)
        return float(x) if _is_number(x) and not _missing(x) else 0.0

    # tied: the two means lie within one another's 95 % interval (either one), or, without an
    # interval, read the same at the shown precision
    return [k for k, v in vals.items()
            if abs(v - vals[top]) <= max(h(top), h(k)) or _strip(shown[k]) == _strip(shown[top])]


def _strip(text: Any) -> str:
    return str(text).replace(UNCONVERGED, "").replace(SCHEDULE_BOUND, "").split(" (")[0]


def text_table(rows: Mapping[Any, Mapping[str, Any]] | Sequence[Mapping[str, Any]], caption: str,
               index: str | None = None, **style):
    """A small table from ``{row: {column: value}}`` (or a list of row dicts with ``index`` as
    the row label), in the style of :func:`styled`: what a notebook shows instead of printing a
    dict or a list."""
    import pandas as pd

    if isinstance(rows, Mapping):
        frame = pd.DataFrame.from_dict(dict(rows), orient="index")
    else:
        frame = pd.DataFrame(list(rows))
        if index is not None:
            frame = frame.set_index(index)
    if index is not None and isinstance(rows, Mapping):
        frame.index.name = index
    return styled(frame, caption, **style)


def flags_table(flags: Mapping[str, Any], caption: str, column: str = "converged",
                split: str | None = " · ", grid: bool = True,
                seed_labels: Mapping[str, Sequence[Any]] | None = None):
    """Yes / no flags as a ✓ / ✗ table (``None``: unknown, shown as —) instead of a printed dict.

    ``{label: bool}``: one row per label, one ``column``; labels such as ``"AN · single
    positive"`` or ``"single positive · AN · seed 0"`` (parts joined by ``split``) become a grid
    when ``grid`` — columns the last part, rows the rest. ``{label: [bool per seed]}``: one column per seed (``seed_labels``:
    ``{label: [seed, ...]}`` names them, else their position)."""
    import pandas as pd

    rows: dict = {}
    for label, v in flags.items():
        if isinstance(v, (list, tuple)):
            names = list((seed_labels or {}).get(label, range(len(v))))
            rows[label] = {f"seed {s}": x for s, x in zip(names, v)}
        elif grid and split and split in str(label):
            head, last = str(label).rsplit(split, 1)
            rows.setdefault(head, {})[last] = v
        else:
            rows[label] = {column: v}
    frame = pd.DataFrame.from_dict(rows, orient="index").astype(object)
    return styled(frame, caption, best=False)


def caption(what: str, *, intervals: bool = True, bold: str | None = "column",
            reference: Sequence[str] = (), unconverged: bool = True, note: str = "") -> str:
    """The caption of a table in this style: ``what`` the numbers are, then how to read them —
    the interval (``intervals``), the † (``unconverged``), what is bold (``bold``: "column",
    "row" or None) and the rows left out of the comparison (``reference``)."""
    parts = [what.rstrip(". ") + "."]
    if intervals:
        parts.append("Each cell: mean over seeds ± half-width of its 95 % Student-t interval "
                     "(seeds); one seed gives no interval.")
    if unconverged:
        parts.append("† a run of the cell did not converge. § schedule-bound: the method's targets "
                     "follow a schedule to the last epoch, so its curve rises until the end by design "
                     "(GR Loss, Eq. 9–13); chapter 02's length check is its control.")
    if bold:
        ref = f" ({', '.join(reference)} left out)" if reference else ""
        tie = "within their 95 % intervals" if intervals else "at the shown precision"
        parts.append(f"Bold: the best of each {bold}{ref} and the cells tied with it {tie}.")
    if note:
        parts.append(note.rstrip(". ") + ".")
    return " ".join(parts)


def value_text(v: Any) -> str:
    """A setting as a reader reads it: a dict as ``k = v`` pairs, a list or tuple as its items
    joined by commas (nested alike), a number as short as it is exact."""
    if isinstance(v, Mapping):
        return ", ".join(f"{k} = " + (f"({value_text(x)})" if isinstance(x, Mapping) and x else value_text(x))
                         for k, x in v.items()) or MISSING
    if isinstance(v, (list, tuple, set, frozenset)):
        items = sorted(v, key=str) if isinstance(v, (set, frozenset)) else v
        return ", ".join(value_text(x) for x in items) or MISSING
    if isinstance(v, (bool, np.bool_)):
        return "✓" if v else "✗"
    if _is_number(v) and not _missing(v):
        return _label_text(v)
    return MISSING if v is None else str(v)


def fields_table(obj: Any, caption: str, skip: Sequence[str] = ()):
    """The fields of a dataclass (a chapter's design) as a two-column table — what a notebook
    shows instead of the dataclass's repr with its dicts and tuples."""
    import dataclasses

    import pandas as pd

    if not dataclasses.is_dataclass(obj):
        raise TypeError(f"fields_table needs a dataclass instance, not {type(obj).__name__}")
    rows = {f.name: value_text(getattr(obj, f.name)) for f in dataclasses.fields(obj) if f.name not in skip}
    frame = pd.DataFrame({"value": pd.Series(rows, dtype=object)})
    frame.index.name = "field"
    return styled(frame, caption, best=False)


#: the most rows and columns a table a notebook shows may have; a longer or wider one becomes a
#: plot or a compact summary (the full table stays in the record and its CSV)
MAX_ROWS = 20
MAX_COLUMNS = 12


def spaced(labels: Sequence[Any], at_most: int = 10) -> list:
    """At most ``at_most`` of ``labels``, evenly spaced, the first and the last always among them
    (the epochs a compact per-epoch table shows)."""
    labels = list(labels)
    if len(labels) <= at_most:
        return labels
    picks = sorted({int(round(i * (len(labels) - 1) / (at_most - 1))) for i in range(at_most)})
    return [labels[i] for i in picks]


def compact_rows(frame, caption: str, *, at_most: int = 10, record: str | None = None, **style):
    """:func:`styled` of ``frame`` with at most ``at_most`` evenly spaced rows (first and last
    kept) when it has more than :data:`MAX_ROWS`; the caption then says which rows it shows and
    where the full table is (``record``: the notebook record that holds it)."""
    rows = spaced(frame.index, at_most) if len(frame) > MAX_ROWS else list(frame.index)
    if len(rows) < len(frame):
        where = f"; every row is in the record `{record}` (and its CSV)" if record else ""
        caption = (caption.rstrip(". ") + f". Shown: {len(rows)} of the {len(frame)} rows, evenly "
                   f"spaced, the first and the last among them{where}.")
        frame = frame.loc[rows]
    return styled(frame, caption, **style)


