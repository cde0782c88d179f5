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
from pathlib import Path
from typing import Any, Dict

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


def record(name: str, value: Any, show: bool = True) -> Any:
    """Record ``value`` under ``name`` in the running notebook's output (and show it)."""
    from IPython.display import display

    plain = _plain(value)
    json.dumps(plain, allow_nan=True)  # fail here, not when the notebook is read
    text = f"{name} = {plain!r}"
    display({RECORD_MIME: {"name": name, "value": plain}, "text/plain": text if show else ""},
            raw=True)
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
    """The first lines of every notebook: versions, device, profile and seeds."""
    import platform

    import torch
    import torchvision

    import mlpl_lab
    from .train import pick_device

    info = {
        "mlpl_lab": mlpl_lab.__version__, "torch": torch.__version__,
        "torchvision": torchvision.__version__, "python": platform.python_version(),
        "device": str(pick_device("auto")), "threads": torch.get_num_threads(),
        "profile": profile, "seeds": list(seeds),
    }
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    info.update(extra or {})
    width = max(len(k) for k in info)
    for k, v in info.items():
        print(f"{k:<{width}}  {v}")
    return info


def setup_notebook(profile: str, seeds) -> Dict[str, Any]:
    """Inline plots (reports need them), seaborn style, quiet progress under papermill, header."""
    import matplotlib

    try:
        from IPython import get_ipython

        ip = get_ipython()
        if ip is not None:
            ip.run_line_magic("matplotlib", "inline")
    except Exception:  # outside IPython: keep the current backend
        matplotlib.use("Agg")
    import seaborn as sns

    sns.set_theme(context="notebook", style="whitegrid")
    return print_header(profile, seeds)


NOTEBOOK_DIR = Path(__file__).resolve().parent.parent / "notebooks"
