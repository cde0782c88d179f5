"""One notebook executed as a report: papermill under a profile, then the offline HTML export and
the record CSVs next to it (:func:`execute_notebook`), over a kernel that talks through local IPC
sockets with the re-polling client (:func:`kernel_config`)."""
from __future__ import annotations

import os
from pathlib import Path

from .figure_log import ENV as FIGURE_ENV

#: parameters a report passes to every notebook, dropped where a notebook does not declare them
REPORT_PARAMETERS = {"live_training"}


def execute_notebook(path: Path, out_dir: Path, profile: str, parameters=None, html: bool = True,
                     timeout: int | None = None, km=None) -> Path:
    """Execute ``path`` with papermill under ``profile``; write the executed notebook (and its
    HTML export) to ``out_dir``. Returns the executed notebook's path. ``km``: a kernel already
    started for this notebook (:mod:`mlpl_lab.reporting.next_kernel`; the caller shuts it down); without
    it papermill starts one. ``timeout``: seconds a cell may run (None: no limit).

    A notebook that does not run to its end -- a cell raising, a cell past ``timeout``, a dead
    kernel -- raises :class:`~mlpl_lab.reporting.report.NotebookFailed` naming the notebook and the cell
    (no HTML is written for it; the executed notebook keeps what ran)."""
    import papermill as pm

    from .report import describe_failure

    path, out_dir = Path(path).resolve(), Path(out_dir).resolve()
    out_dir.mkdir(parents=True, exist_ok=True)
    executed = out_dir / path.name
    os.environ.setdefault("MLPL_LAB_PROGRESS", "0")  # progress bars would clutter reports
    params = {"profile": profile} | dict(parameters or {})
    if REPORT_PARAMETERS & set(params):  # given to every notebook of a report: only where declared
        declared = set(pm.inspect_notebook(str(path)))
        params = {k: v for k, v in params.items() if k not in REPORT_PARAMETERS or k in declared}
    executed.unlink(missing_ok=True)  # what a failure reports on is this execution's
    # what each figure shows, logged by the kernel (mlpl_lab.reporting.figure_log): the figure tests
    # read <stem>.figures.jsonl next to the executed notebook of any report, cpu or smoke
    figures = out_dir / f"{path.stem}.figures.jsonl"
    figures.unlink(missing_ok=True)
    saved = os.environ.get(FIGURE_ENV)
    os.environ[FIGURE_ENV] = str(figures.resolve())
    try:
        # papermill's ``cwd`` changes the whole process's working folder while it runs; a kernel
        # started ahead already runs in the notebook's folder, so none is given with it (two
        # notebooks run side by side in threads: :func:`mlpl_lab.commands.series.execute_side_by_side`)
        where = {"km": km} if km is not None else {"cwd": str(path.parent)}
        pm.execute_notebook(str(path), str(executed), parameters=params, kernel_name="python3",
                            progress_bar=False, execution_timeout=timeout, config=kernel_config(), **where)
    except Exception as exc:
        (out_dir / (path.stem + ".html")).unlink(missing_ok=True)  # no earlier report passes for this one
        raise describe_failure(path, executed, exc, timeout) from exc
    finally:
        if saved is None:
            os.environ.pop(FIGURE_ENV, None)
        else:
            os.environ[FIGURE_ENV] = saved
    if html:  # offline: MathJax next to the report, widgets as their default images, no CDN script
        import nbformat

        from .html_export import report_html
        from .report import strip_records, write_record_csvs

        nb = nbformat.read(str(executed), as_version=4)
        strip_records(nb)  # the records stay in the .ipynb; the HTML draws no empty area for them
        body = report_html(nb, out_dir)
        (out_dir / (path.stem + ".html")).write_text(body, encoding="utf-8")
        write_record_csvs(executed, out_dir)  # the full tables the notebook shows compacted
    return executed


def kernel_config():
    """How papermill talks to the kernel: local IPC sockets (files under a private temporary
    folder), so the kernel never runs over plain TCP (it said "Kernel is running over TCP without
    encryption" for every notebook). CurveZMQ-encrypted TCP was tried first: under a loaded
    2-core machine a notebook's client and kernel once both waited for a message neither got."""
    import tempfile

    from traitlets.config import Config

    folder = Path(tempfile.mkdtemp(prefix="mlpl-lab-kernel-"))
    # waits without a deadline re-poll (mlpl_lab.reporting.kernel_client: a report once hung on a lost wake-up)
    return Config({"KernelManager": {"transport": "ipc", "ip": str(folder / "kernel")},
                   "AsyncKernelManager": {"client_class": "mlpl_lab.reporting.kernel_client.RepollingKernelClient"}})
