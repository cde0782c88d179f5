"""The numerics version: the one thing besides its spec that a run's key holds.

A run's key (:attr:`mlpl_lab.runs.store.RunSpec.key`) is a hash of its spec and
:data:`NUMERICS_VERSION`. The version is an explicit constant, **bumped by hand when a change
alters what a run computes** (a loss, a method's update, the data a seed draws, the training
loop's order of operations, the initialisation). A comment, a docstring, a renamed file or a
moved module changes no key, so the stored runs and a shipped course pack stay valid across
refactors.

CI guards the constant: ``tests/test_goldens.py`` retrains a few short smoke runs (one per
method family, both stages of LAC, a two-network method, PU-MLC) and compares them with the
golden records committed in ``tests/goldens/``. A change that alters any of them fails with a
message saying to bump this version, regenerate the goldens (``python tests/goldens.py
--write``) and the course pack. The comparison is bitwise where this machine's environment
matches the goldens' (torch version, device, threads, CPU capability) and within a stated
tolerance elsewhere; the failure says which.

This module imports nothing, so reading the version never imports torch.
"""
from __future__ import annotations

import ast
from pathlib import Path

#: bump when a change alters what any run computes (and regenerate tests/goldens and the pack).
#: 1: run keys without the source hash (issue 33). 2: PU-MLC's mixup regulariser exact on both
#: sides (issue 35; the golden PU-MLC run's temperatures moved by about 1e-8).
NUMERICS_VERSION = 2


def version_on_disk() -> int:
    """:data:`NUMERICS_VERSION` as the file on disk says now (not as this process imported it):
    how ``mlpl-lab report`` notices the version changing while a notebook runs."""
    tree = ast.parse(Path(__file__).read_text())
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and getattr(node.targets[0], "id", None) == "NUMERICS_VERSION"):
            return int(ast.literal_eval(node.value))
    raise RuntimeError(f"{__file__} defines no NUMERICS_VERSION")
