"""A researcher's method file as a method the runs build: ``build_method("user_file", source=...,
**hyperparameters)`` (:data:`mlpl_lab.methods.registry.USER_METHOD`).

A run's spec names the file by its **source** (the content hash of
:mod:`mlpl_lab.methods.user_file`), never by its path: :func:`keep_source` copies the checked
file into the lab's data folder as ``user_methods/<source>.py`` (``MLPL_LAB_DATA`` moves it with
the run store), and every process that builds the method -- a worker process, a Dask worker on
the same data folder, a notebook reloading the run -- imports that copy, after checking that its
bytes still hash to the source (a copy altered since is refused). So an edited file is another
source (its runs are new keys), an unchanged file moved or renamed keeps its runs, and a stored
run can be rebuilt after its file was edited. The copy is never shipped in a pack: a pack is
data, and a run of a user method imported from one is rebuilt only where its file was added.

A plain loss trains as :class:`UserLossMethod`: one network and the loss, as
:class:`~mlpl_lab.methods.loss_method.LossMethod` trains a registered loss (``epoch`` and
``num_epochs`` passed to a loss that declares them). A Method subclass is built with the
hyperparameters as its constructor's keywords.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Dict

from ..core.paths import data_root
from ..losses.registry import accepts
from .base import Method
from .user_file import UserFile, UserFileError, loss_keywords, method_keywords, source_of, user_file_from


def user_methods_dir() -> Path:
    """Where the added method files are kept, by source: ``<data root>/user_methods``."""
    return data_root() / "user_methods"


def keep_source(uf: UserFile) -> Path:
    """Copy the checked file to ``user_methods/<source>.py`` (atomically; an existing copy with
    the same bytes is kept) and return its path."""
    folder = user_methods_dir()
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{uf.source}.py"
    if path.is_file() and source_of(path.read_bytes()) == uf.source:
        return path
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{uf.source}-", suffix=".py")
    with os.fdopen(fd, "wb") as f:
        f.write(uf.data)
    os.replace(tmp, path)
    return path


_LOADED: Dict[str, UserFile] = {}


def kept_file(source: str) -> UserFile:
    """The method file of ``source`` from its kept copy (imported once per process); a missing
    copy or one whose bytes no longer hash to ``source`` is an error saying what to do."""
    if source in _LOADED:
        return _LOADED[source]
    path = user_methods_dir() / f"{source}.py"
    if not path.is_file():
        raise UserFileError(f"no method file of source {source} in {user_methods_dir()}: this run's method "
                            "was added elsewhere (or the folder was deleted); run `mlpl-lab benchmark --add "
                            "FILE` here with that file")
    data = path.read_bytes()
    if source_of(data) != source:
        raise UserFileError(f"{path} was changed since it was added (its content hash is {source_of(data)}, "
                            f"the runs name {source}); delete it and run `mlpl-lab benchmark --add FILE` "
                            "again: the runs of an edited file are new runs")
    uf = user_file_from(data, path)
    _LOADED[source] = uf
    return uf


class UserLossMethod(Method):
    """One network trained with the loss of a method file (``loss(logits, labels, **hp)``), as
    :class:`~mlpl_lab.methods.loss_method.LossMethod` trains a registered loss."""

    def __init__(self, loss_fn, label: str = "", **loss_hparams):
        super().__init__(**loss_hparams)
        self.loss_name = label
        self.loss_fn = loss_fn
        self.loss_hparams = loss_hparams

    def loss_kwargs(self, epoch: int) -> dict:
        """The hyperparameters, and ``epoch`` (0-based) / ``num_epochs`` where the loss declares them."""
        kw = dict(self.loss_hparams)
        if accepts(self.loss_fn, "epoch"):
            kw["epoch"] = epoch
        if accepts(self.loss_fn, "num_epochs"):
            kw["num_epochs"] = self.ctx.epochs
        return kw

    def training_step(self, batch, epoch):
        logits = self.net(batch["image"])
        return self.loss_fn(logits, self.batch_labels(batch), **self.loss_kwargs(epoch)), {}


def _unknown(uf: UserFile, hparams: Dict[str, Any]) -> None:
    keywords, var_kw = (loss_keywords if uf.kind == "loss" else method_keywords)(uf.path, uf.target)
    unknown = [k for k in hparams if k not in keywords]
    if unknown and not var_kw:
        raise TypeError(f"{uf.label!r} ({uf.path.name}) got unknown hyperparameter(s) {unknown}; it takes "
                        f"{sorted(keywords)}")


def build_user_method(source: str, **hparams) -> Method:
    """The method of the file kept under ``source`` with ``hparams`` (unknown ones raise
    ``TypeError`` before training, as for a registered method)."""
    uf = kept_file(source)
    _unknown(uf, hparams)
    if uf.kind == "loss":
        method = UserLossMethod(uf.target, uf.label, **hparams)
    else:
        method = uf.target(**hparams)
    method.user_label = uf.label
    return method
