"""``mlpl-lab``: run the notebook series as reports.

``mlpl-lab report [--profile smoke|cpu|gpu] [--notebooks ...] [--out reports/]`` executes
the notebooks in order with papermill (kernel ``python3``), injecting the profile, and
exports each to HTML with nbconvert (inputs hidden). Notebooks run one after another: two
torch processes at once are several times slower on 2 cores.
"""
from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

from .profiles import PROFILES
from .report import NOTEBOOK_DIR, read_records


def notebook_paths(names=None):
    paths = sorted(NOTEBOOK_DIR.glob("[0-9][0-9]_*.ipynb"))
    if not names:
        return paths
    chosen = []
    for name in names:
        match = [p for p in paths if p.name == name or p.stem == name or p.name.startswith(name)]
        if not match:
            raise SystemExit(f"no notebook matches {name!r}; available: {[p.name for p in paths]}")
        chosen.extend(match)
    return chosen


def execute_notebook(path: Path, out_dir: Path, profile: str, parameters=None, html: bool = True,
                     timeout: int | None = None) -> Path:
    """Execute ``path`` with papermill under ``profile``; write the executed notebook (and its
    HTML export) to ``out_dir``. Returns the executed notebook's path."""
    import papermill as pm

    out_dir.mkdir(parents=True, exist_ok=True)
    executed = out_dir / path.name
    os.environ.setdefault("MLPL_LAB_PROGRESS", "0")  # progress bars would clutter reports
    params = {"profile": profile} | dict(parameters or {})
    pm.execute_notebook(str(path), str(executed), parameters=params, kernel_name="python3",
                        cwd=str(path.parent), progress_bar=False, execution_timeout=timeout)
    if html:
        import nbconvert
        import nbformat

        nb = nbformat.read(str(executed), as_version=4)
        exporter = nbconvert.HTMLExporter(exclude_input=True, exclude_input_prompt=True,
                                          exclude_output_prompt=True)
        body, _ = exporter.from_notebook_node(nb)
        (out_dir / (path.stem + ".html")).write_text(body, encoding="utf-8")
    return executed


def cmd_report(args) -> int:
    out = Path(args.out)
    paths = notebook_paths(args.notebooks)
    if not paths:
        print(f"no notebooks found in {NOTEBOOK_DIR}", file=sys.stderr)
        return 1
    total = time.perf_counter()
    for path in paths:
        t0 = time.perf_counter()
        print(f"[mlpl-lab] {path.name} (profile {args.profile}) ...", flush=True)
        executed = execute_notebook(path, out, args.profile)
        records = read_records(executed)
        print(f"[mlpl-lab]   done in {time.perf_counter() - t0:.0f} s; {len(records)} records; "
              f"HTML: {out / (path.stem + '.html')}", flush=True)
    print(f"[mlpl-lab] {len(paths)} notebooks in {time.perf_counter() - total:.0f} s", flush=True)
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="mlpl-lab", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    rep = sub.add_parser("report", help="execute the notebooks and write HTML reports")
    rep.add_argument("--profile", default="cpu", choices=sorted(PROFILES))
    rep.add_argument("--notebooks", nargs="*", help="names or prefixes, e.g. 00 02_gr_loss")
    rep.add_argument("--out", default="reports")
    rep.set_defaults(func=cmd_report)
    args = parser.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    raise SystemExit(main())
