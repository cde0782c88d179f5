"""The next notebook's kernel, started while the current notebook runs.

``mlpl-lab report`` executes its notebooks one after another (two torch processes training at
once are several times slower on 2 cores). Each papermill execution used to start its own
kernel and then import torch, matplotlib and the package: about 3.5 s of kernel start and 5 s
of imports per notebook, over half of a warm cpu report (8 notebooks in 128 s, measured
2026-11-24). :class:`NextKernel` starts notebook N+1's kernel while notebook N runs, and that
kernel imports, at start-up, the modules N+1's own code imports (ipykernel's
``IPKernelApp.exec_lines``: run before the kernel answers, with no execution count, no output in
the notebook and no name bound in its namespace). Papermill then executes N+1 on it (``km=``).

Nothing the notebook computes changes: its cells run in order in a kernel that has only
imported what the cells import anyway (the tests compare a notebook's outputs and execution
counts with a fresh kernel's; a warm cpu series gave every record identical either way). The
imports overlap with notebook N, which is one Python thread while reading stored runs; while N
trains they cost it a few seconds of one core. Only one kernel waits at a time.
"""
from __future__ import annotations

import ast
import importlib
import sys
from pathlib import Path
from typing import Callable, Dict, List, Sequence

from jupyter_client.manager import AsyncKernelManager
from jupyter_core.utils import run_sync

#: nbclient's history setting for the kernels it starts (no sqlite file shared by two kernels)
HISTORY = "--HistoryManager.hist_file=:memory:"


def imported_modules(notebook: Path) -> List[str]:
    """The modules (and ``from``-imported names that may be submodules) the code cells of
    ``notebook`` import at their top level, in order; cells that are not plain Python (magics)
    are skipped."""
    import nbformat

    nb = nbformat.read(str(notebook), as_version=4)
    names: List[str] = []
    for cell in nb.cells:
        if cell.cell_type != "code":
            continue
        try:
            tree = ast.parse(cell.source)
        except SyntaxError:
            continue
        for node in tree.body:
            if isinstance(node, ast.Import):
                names += [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                names.append(node.module)
                names += [f"{node.module}.{a.name}" for a in node.names if a.name != "*"]
    return list(dict.fromkeys(names))


def preload(names: Sequence[str]) -> None:
    """Import ``names`` (run inside the kernel at start-up). A ``from``-imported name that is not
    a module is skipped; any other failure is left to the notebook's own import to report."""
    for name in names:
        parent, _, attr = name.rpartition(".")
        if parent in sys.modules and hasattr(sys.modules[parent], attr):
            continue  # ``from parent import attr`` of a function, class or loaded module
        try:
            importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name != name or not parent:  # a missing package: the notebook will say so
                return
        except Exception:  # the notebook's own import raises it again, in its cell
            return


def exec_line(names: Sequence[str]) -> str:
    """The kernel's start-up line: imports ``names`` and binds no name in the user namespace."""
    return f"__import__('mlpl_lab.reporting.next_kernel', fromlist=['preload']).preload({list(names)!r})"


class NextKernel:
    """One kernel started ahead for a given notebook; :meth:`take` hands it to papermill.

    ``config`` makes the kernel manager's configuration (``mlpl_lab.reporting.execute.kernel_config``: IPC
    sockets, the re-polling client)."""

    def __init__(self, config: Callable[[], object]):
        self.config = config
        self.path: Path | None = None
        self.km = None
        self.started: Dict[str, object] = {}

    def start(self, path: Path, env: Dict[str, str], **started) -> None:
        """Start ``path``'s kernel now (returns at once; the kernel starts in its own process) with
        environment ``env`` (it must name the notebook's chapter for the progress lines). ``started`` is kept for :meth:`take` (e.g. the source fingerprint at this moment)."""
        self.close()
        km = _Manager(kernel_name="python3", config=self.config())
        arg = "--IPKernelApp.exec_lines=" + repr([exec_line(imported_modules(path))])
        run_sync(km.start_kernel)(extra_arguments=[HISTORY, arg], cwd=str(path.parent), env=dict(env))
        self.path, self.km, self.started = path, km, dict(started)

    def take(self, path: Path):
        """``(kernel manager, started)`` when the kernel waiting is ``path``'s, else ``(None, {})``
        (papermill then starts its own). The caller shuts it down with :func:`shutdown`."""
        if self.km is None or self.path != path:
            self.close()
            return None, {}
        km, started = self.km, self.started
        self.path, self.km, self.started = None, None, {}
        return km, started

    def close(self) -> None:
        """Shut down a kernel that is still waiting (the report ended or failed before its turn)."""
        km, self.km, self.path = self.km, None, None
        if km is not None:
            shutdown(km)


def shutdown(km, now: bool = False) -> None:
    """Stop ``km``'s kernel and every client it handed out (papermill leaves a kernel it did not
    start running, and its client's channels open). ``now``: kill it at once (a kernel stuck in a
    cell, or dead, would not answer a shutdown request)."""
    for kc in km.handed_out:
        kc.stop_channels()
    try:
        run_sync(km.shutdown_kernel)(now=now)
    finally:
        run_sync(km.cleanup_resources)()


class _Manager(AsyncKernelManager):
    """An async kernel manager that remembers the clients it made (to close them)."""

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.handed_out: list = []

    def client(self, **kwargs):
        kc = super().client(**kwargs)
        self.handed_out.append(kc)
        return kc
