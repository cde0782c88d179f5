"""Notebook records and HTML reports.

``record(name, value)`` displays a value under a custom MIME type, so it survives in the
executed notebook (papermill's ``pm.record`` is gone and scrapbook is unmaintained);
``read_records(path)`` returns them as a dict. Tests execute every notebook under the
``smoke`` profile and assert on these records (recommenders' notebooks-as-tests pattern).
"""
from __future__ import annotations

import json
import math
import numbers
import os
import threading
from pathlib import Path
from typing import Any, Dict

from . import figure_log

RECORD_MIME = "application/vnd.mlpl-lab.record+json"


def _plain(value: Any) -> Any:
    """Convert tensors, numpy values and containers to JSON-serialisable Python values."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        return value.tolist()
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if isinstance(value, numbers.Integral):
        return int(value)
    if isinstance(value, numbers.Real):
        return float(value)
    raise TypeError(f"cannot record a value of type {type(value).__name__}; record numbers, "
                    "strings, lists or dicts")


def _fmt(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.2f}" if math.isfinite(v) else str(v)
    return str(v)


def _is_scalar(v: Any) -> bool:
    return v is None or isinstance(v, (str, bool, int, float))


#: a flat record with more entries than this reads as a summary line, not as every value
MAX_ITEMS = 12


def readable(name: str, plain: Any) -> Dict[str, str]:
    """How a record reads in a report, its name in words (``GR_minus_AN`` reads "GR minus AN"):
    a short line for a number or a flat dict of at most :data:`MAX_ITEMS` entries; a summary line
    (how many values, the first and the last, the range) for a longer one; a table in the lab's
    style for a dict of flat dicts, compacted to at most
    :data:`~mlpl_lab.analysis.display.MAX_ROWS` rows and
    :data:`~mlpl_lab.analysis.display.MAX_COLUMNS` columns (``text/plain`` and ``text/html``);
    a shortened repr otherwise. The record itself keeps every value."""
    from ..analysis.display import header_words

    title = header_words(name)
    if _is_scalar(plain):
        return {"text/plain": f"{title}: {_fmt(plain)}"}
    if isinstance(plain, dict) and all(_is_scalar(v) for v in plain.values()):
        if len(plain) <= MAX_ITEMS:
            return {"text/plain": f"{title}: " + " · ".join(f"{header_words(k)} {_fmt(v)}"
                                                              for k, v in plain.items())}
        keys = list(plain)
        numbers = [v for v in plain.values() if isinstance(v, (int, float)) and not isinstance(v, bool)
                   and math.isfinite(v)]
        span = f"; from {_fmt(min(numbers))} to {_fmt(max(numbers))}" if numbers else ""
        return {"text/plain": f"{title}: {len(keys)} values, {keys[0]}: {_fmt(plain[keys[0]])} … "
                              f"{keys[-1]}: {_fmt(plain[keys[-1]])}{span} (every value is in the record "
                              f"`{name}`)"}
    if isinstance(plain, dict) and plain and all(
            isinstance(v, dict) and all(_is_scalar(x) for x in v.values()) for v in plain.values()):
        import pandas as pd

        from ..analysis.display import MAX_COLUMNS, compact_rows, spaced

        frame = pd.DataFrame.from_dict(plain, orient="index")
        caption = f"{title} (the record `{name}`)"
        if frame.shape[1] > MAX_COLUMNS:
            cols = spaced(frame.columns, MAX_COLUMNS - 2)
            caption += (f". Shown: {len(cols)} of its {frame.shape[1]} columns, evenly spaced, the first "
                        "and the last among them")
            frame = frame[cols]
        # a column whose values were all integers shows them as integers (its gaps made it float)
        ints = [c for c in frame.columns
                if any(c in v for v in plain.values())
                and all(isinstance(v[c], int) and not isinstance(v[c], bool) for v in plain.values() if c in v
                        and v[c] is not None)]
        st = compact_rows(frame, caption, record=name, best=False, counts=ints)
        return {"text/plain": f"{title}:\n{st.data.to_string()}", "text/html": st.to_html()}
    if isinstance(plain, dict) and plain and all(isinstance(v, dict) for v in plain.values()):
        flat = _flatten_rows(plain)
        if flat is not None:  # deeper nesting: rows keyed "a / b"
            return readable(name, flat)
    text = repr(plain)
    return {"text/plain": f"{title}: {text[:300]}{' …' if len(text) > 300 else ''}"}


def _flatten_rows(d: Dict[str, Any], prefix: str = ""):
    """{a: {b: {col: scalar}}} -> {"a / b": {col: scalar}}; None when the leaves are not flat dicts."""
    out: Dict[str, Any] = {}
    for k, v in d.items():
        key = f"{prefix}{k}"
        if isinstance(v, dict) and v and all(_is_scalar(x) for x in v.values()):
            out[key] = v
        elif isinstance(v, dict) and v:
            sub = _flatten_rows(v, key + " / ")
            if sub is None:
                return None
            out.update(sub)
        else:
            return None
    return out


def record(name: str, value: Any, show: bool = True) -> Any:
    """Record ``value`` under ``name`` in the running notebook's output (and show it, as a
    short line or a table — :func:`readable`)."""
    from IPython.display import display

    plain = _plain(value)
    item: Any = {"name": name, "value": plain}
    text = json.dumps(item, allow_nan=True)  # fail here, not when the notebook is read
    if not all_finite(plain):
        # NaN and infinity are not JSON: jupyter_client would warn in the notebook and send them
        # as the strings "nan" / "inf". As one JSON text they come back as floats (read_records).
        item = text
    # show=False: the record alone, no text/plain, so neither JupyterLab nor the HTML report
    # draws an (empty) output area for it; read_records finds it by its MIME type
    shown = readable(name, plain) if show else {}
    display({RECORD_MIME: item, **shown}, raw=True)
    run_flags = getattr(value, "run_flags", None)
    if isinstance(run_flags, dict):  # a convergence record that knows its runs' keys (analysis.tables.RunFlags)
        from ..analysis.tables import RUN_KEYS_SUFFIX

        display({RECORD_MIME: {"name": name + RUN_KEYS_SUFFIX, "value": _plain(run_flags)}}, raw=True)
    return value


def read_records(path) -> Dict[str, Any]:
    """The values recorded by ``record`` in an executed notebook (the last one wins)."""
    import nbformat

    nb = nbformat.read(str(path), as_version=4)
    out: Dict[str, Any] = {}
    for cell in nb.cells:
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if RECORD_MIME in data:
                item = data[RECORD_MIME]
                if isinstance(item, str):
                    item = json.loads(item)
                out[item["name"]] = item["value"]
    return out


def record_frame(value: Any):
    """A record as a table (a pandas DataFrame), or None when it is not one: a dict of flat dicts
    (rows; deeper nesting keyed "a / b") or a flat dict of more than :data:`MAX_ITEMS` values
    (one column, ``value``)."""
    import pandas as pd

    if not isinstance(value, dict) or not value:
        return None
    if all(_is_scalar(v) for v in value.values()):
        return pd.DataFrame({"value": pd.Series(value, dtype=object)}) if len(value) > MAX_ITEMS else None
    rows = value if all(isinstance(v, dict) and all(_is_scalar(x) for x in v.values())
                        for v in value.values()) else (_flatten_rows(value) if all(
                            isinstance(v, dict) for v in value.values()) else None)
    return pd.DataFrame.from_dict(rows, orient="index") if rows else None


def strip_records(nb) -> int:
    """Drop from a notebook (an nbformat node or dict, changed in place) every output that holds
    only a record (``record(..., show=False)``: nothing to read), so its HTML export draws no
    empty output area for it. The executed ``.ipynb`` keeps them (:func:`read_records`). Returns
    how many outputs were dropped."""
    n = 0
    for cell in nb["cells"]:
        outputs = cell.get("outputs")
        if not outputs:
            continue
        kept = [o for o in outputs if set(o.get("data", {}) or {}) != {RECORD_MIME}]
        n += len(outputs) - len(kept)
        cell["outputs"] = kept
    return n


def write_record_csvs(executed, out_dir) -> list:
    """Every record of the executed notebook that is a table (:func:`record_frame`) as
    ``<notebook>_<record>.csv`` in ``out_dir``: the full tables a notebook shows compacted.
    Returns the paths written."""
    out = Path(out_dir)
    paths = []
    for name, value in read_records(executed).items():
        frame = record_frame(value)
        if frame is None:
            continue
        path = out / f"{Path(executed).stem}_{name}.csv"
        frame.to_csv(path)
        paths.append(path)
    return paths


class NotebookFailed(RuntimeError):
    """A notebook that did not run to its end. ``str()`` is one line: the notebook, the cell
    (its index in the ``.ipynb``, counted from 0, and the first line of its source) and why."""

    def __init__(self, message: str, notebook: str, cell: int | None = None):
        super().__init__(message)
        self.notebook, self.cell = notebook, cell


#: cells papermill adds to an executed notebook (left out when cells are counted)
ADDED_CELL_TAGS = ("injected-parameters", "papermill-error-cell-tag")


def stopped_cell(executed) -> tuple[int, str] | None:
    """``(index, first line)`` of the cell whose execution stopped ``executed`` (the last cell
    papermill started); the index counts the cells of the notebook as written, without the cells
    papermill adds. None when the file cannot be read or no cell started."""
    import nbformat

    try:
        nb = nbformat.read(str(executed), as_version=4)
    except Exception:  # a notebook that failed before papermill wrote it
        return None
    found, index = None, 0
    for cell in nb.cells:
        if any(tag in cell.get("metadata", {}).get("tags", []) for tag in ADDED_CELL_TAGS):
            continue
        if cell.get("metadata", {}).get("papermill", {}).get("start_time"):
            lines = [line.strip() for line in cell.source.splitlines() if line.strip()]
            first = lines[0] if lines else ""
            found = (index, first if len(first) <= 80 else first[:77] + "...")
        index += 1
    return found


def describe_failure(source: Path, executed: Path, exc: BaseException,
                     timeout: float | None = None) -> NotebookFailed:
    """The :class:`NotebookFailed` of ``source`` for what papermill raised: a cell past its time
    limit (nbclient's ``CellTimeoutError``), a dead kernel (``DeadKernelError``), an exception
    in a cell (``PapermillExecutionError``) or anything else (a kernel that did not start)."""
    from nbclient.exceptions import CellTimeoutError, DeadKernelError
    from papermill.exceptions import PapermillExecutionError

    cell = stopped_cell(executed)
    where = f"cell index {cell[0]} (`{cell[1]}`)" if cell else "before any cell ran"
    text = str(exc).strip().splitlines()
    if isinstance(exc, CellTimeoutError) and "Cell execution timed out" in str(exc):
        why = (f"{where} was still running after {timeout:g} s, the per-cell limit; its kernel was "
               "stopped. A stuck kernel, or a cell slower than the profile's cell_timeout_s allows: "
               "give it more with --cell-timeout SECONDS")
    elif isinstance(exc, CellTimeoutError):  # the reply came but its output did not (iopub)
        why = f"{where}: the kernel's output did not arrive in time ({' '.join(text[:2])})"
    elif isinstance(exc, DeadKernelError):
        why = f"the kernel died while {where} ran (killed for lack of memory, or a crash in native code)"
    elif isinstance(exc, PapermillExecutionError):
        why = f"{where} raised {exc.ename}: {exc.evalue}"
    else:
        why = f"{where}: {type(exc).__name__}: {text[0] if text else ''}"
    return NotebookFailed(f"{source.name}: {why}; the notebook as far as it ran: {executed}",
                          source.name, cell[0] if cell else None)


def all_finite(value: Any) -> bool:
    """True when every number inside ``value`` is finite (used by the notebook tests)."""
    if isinstance(value, dict):
        return all(all_finite(v) for v in value.values())
    if isinstance(value, (list, tuple)):
        return all(all_finite(v) for v in value)
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return True
    return math.isfinite(value)


def print_header(profile: str, seeds, extra: Dict[str, Any] | None = None) -> Dict[str, Any]:
    """The first lines of every notebook: versions, device, profile and seeds (a list, or the
    chapter's own sentence: which seeds its tables use and which one selects)."""
    import platform

    import torch
    import torchvision

    import mlpl_lab
    from ..engine.device import pick_device

    info = {
        "edition": f"mlpl_lab {mlpl_lab.__version__} (CHANGELOG.md)",
        "mlpl_lab": mlpl_lab.__version__, "torch": torch.__version__,
        "torchvision": torchvision.__version__, "python": platform.python_version(),
        "device": str(pick_device("auto")), "threads": torch.get_num_threads(),
        "profile": profile, "seeds": seeds if isinstance(seeds, str) else list(seeds),
    }
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    info.update(extra or {})
    width = max(len(k) for k in info)
    for k, v in info.items():
        print(f"{k:<{width}}  {v}")
    return info


def setup_notebook(profile, seeds, start: bool = True, chapter: str | None = None) -> Dict[str, Any]:
    """Inline plots (reports need them), seaborn style, quiet progress under papermill, header
    (``profile``: a name or a :class:`~mlpl_lab.profiles.Profile`; the header says where its runs
    start: the lab's pretrained backbone, ImageNet weights or scratch).

    ``chapter`` (the notebook's stem, e.g. ``"02_gr_loss"``; under ``mlpl-lab report`` the
    environment names it): before the header the shipped course pack is imported when the store
    lacks runs it holds, as ``make report`` does (:func:`mlpl_lab.reporting.serve.serve_pack`), so
    Run All in JupyterLab, papermill and nbconvert serve it too; after it, a chapter that must
    still train says how much, how long it took when measured and how to stop and resume, and
    shows one progress line for the chapter (:func:`mlpl_lab.reporting.serve.announce_training`)."""
    import matplotlib

    try:
        from IPython import get_ipython

        ip = get_ipython()
        if ip is not None:
            ip.run_line_magic("matplotlib", "inline")
            if os.environ.get(figure_log.ENV):  # under `mlpl-lab report`: log what each figure shows
                figure_log.register(ip)
    except Exception:  # outside IPython: keep the current backend
        matplotlib.use("Agg")
    import seaborn as sns

    sns.set_theme(context="notebook", style="whitegrid")
    extra = {}
    if start:
        from ..protocol.common import describe_start
        from .serve import serve_pack

        serve_pack(profile, chapter)

        extra["start"] = describe_start(profile)
        from ..runs.pack import store_provenance

        extra["results"] = store_provenance()  # a shipped or imported pack, or this store's runs
    name = getattr(profile, "name", profile)
    info = print_header(name, seeds, extra)
    if start:
        from .serve import announce_training

        announce_training(profile, chapter)
    return info


NOTEBOOK_DIR = Path(__file__).resolve().parents[2] / "notebooks"


# MathJax 2.7 as ``jupyter_server_mathjax`` ships it: the TeX input and the HTML-CSS and SVG
# outputs, with the STIX-Web fonts only (no TeX fonts, no CommonHTML output). Its stock
# configuration asks HTML-CSS for the TeX web fonts, whose font data (jax/output/HTML-CSS/fonts/TeX)
# the bundle lacks: offline, every equation that needs a stretchy glyph (\widehat, \big[, \langle)
# ended as "[Math Processing Error]" and the rest fell back to misplaced glyphs (hats above their
# letters). ``local/mlpl_lab`` (written by :func:`install_mathjax`) points both outputs at STIX-Web.
MATHJAX_CONFIG = "TeX-AMS-MML_HTMLorMML-full,Safe,local/mlpl_lab"
MATHJAX_LOCAL_CONFIG = """\
MathJax.Hub.Config({
  "HTML-CSS": {availableFonts: [], preferredFont: null, webFont: "STIX-Web", imageFont: null},
  SVG: {font: "STIX-Web"},
  MathMenu: {showRenderer: false, showFontMenu: false},
  // the hidden MathML kept for screen readers: its mathvariant rules name the TeX web fonts
  styles: {".MJX_Assistive_MathML [mathvariant]": {"font-family": "inherit"}}
});
MathJax.Ajax.loadComplete("[MathJax]/config/local/mlpl_lab.js");
"""


#: one MathJax copy at a time in this process (notebooks exported side by side)
_MATHJAX_LOCK = threading.Lock()


def install_mathjax(out_dir: Path) -> str:
    """Copy MathJax (2.7, from the ``jupyter_server_mathjax`` package) next to the reports, once,
    with the configuration that uses the fonts it ships (:data:`MATHJAX_CONFIG`), and return the
    relative URL the HTML loads it from: the equations then render without internet
    (nbconvert's default points at a CDN, and offline pages showed raw LaTeX). Safe when two
    notebooks export at once (threads share a lock; processes each copy into a folder of their
    own and the first to rename it wins)."""
    import shutil
    import tempfile

    import jupyter_server_mathjax

    source = Path(jupyter_server_mathjax.__file__).parent / "static"
    target = out_dir / "mathjax"
    with _MATHJAX_LOCK:
        if not (target / "MathJax.js").exists():
            tmp = Path(tempfile.mkdtemp(prefix=".mathjax.", dir=out_dir))
            try:
                shutil.copytree(source, tmp / "mathjax")
                shutil.rmtree(target, ignore_errors=True)
                try:
                    (tmp / "mathjax").rename(target)
                except OSError:  # another process renamed its copy there first
                    if not (target / "MathJax.js").exists():
                        raise
            finally:
                shutil.rmtree(tmp, ignore_errors=True)
        local = target / "config" / "local" / "mlpl_lab.js"
        if not local.exists() or local.read_text(encoding="utf-8") != MATHJAX_LOCAL_CONFIG:
            local.parent.mkdir(parents=True, exist_ok=True)
            part = local.with_name(f".{local.name}.{os.getpid()}")
            part.write_text(MATHJAX_LOCAL_CONFIG, encoding="utf-8")
            os.replace(part, local)
    return f"mathjax/MathJax.js?config={MATHJAX_CONFIG}"
