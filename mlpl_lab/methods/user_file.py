"""A researcher's own method in one plain Python file, read and checked before anything trains.

The file (``mlpl-lab benchmark --add FILE``; the handbook's "Rank your own method against the
course") holds either a loss::

    LABEL = "AN, unknowns at eps"          # the row's name in the benchmark
    GRID = {"eps": [0.05, 0.1]}            # optional: tuned on the lab's equal budget
    def loss(logits, observed, eps=0.05):  # observed: 1 positive, 0 negative, -1 unknown
        ...                                # a scalar tensor

or a :class:`~mlpl_lab.methods.base.Method` subclass, for a method with state (two networks, a
label matrix): ``METHOD = MyMethod`` (or one subclass defined in the file with ``LABEL`` as a
class attribute; ``LABEL`` and ``GRID`` may be class attributes). Its constructor's keywords are
what ``GRID`` tunes.

:func:`read_user_file` and :func:`mlpl_lab.methods.user_checks.check_user_file` check
everything a run would trip over later, each failure a
:class:`UserFileError` naming the problem and its fix: the file imports; ``LABEL`` is a short
text of its own (not a course row's, ``reserved``); exactly one of ``loss`` and ``METHOD``;
the loss takes ``(logits, observed, ...)``, every other argument with a default or a ``GRID``
entry; ``GRID`` maps keywords the loss (or the constructor) takes to non-empty lists of distinct
numbers, texts or booleans, each list starting with the keyword's declared default (the lab's
grids list the default first: it is the first trial, and what an untuned design runs); and, on a
tiny batch at every point of the grid, the loss returns a finite scalar whose gradient reaches
the logits and is finite, without changing ``observed`` (a method: one training step does, and
its predictions are probabilities).

The file's **source** is the first 20 hex digits of its bytes' sha256 (as a run key): the runs'
specs carry it, so an edited file re-keys its runs and an unchanged one is served from the store
(:mod:`mlpl_lab.methods.user_method`).
"""
from __future__ import annotations

import hashlib
import importlib.util
import inspect
import itertools
import math
import sys
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple

from .base import Method

#: the loop passes these to a loss that declares them (``LossMethod``'s rule): never in ``GRID``
LOOP_KEYWORDS = ("epoch", "num_epochs")
#: the longest ``LABEL`` (it heads a table row)
MAX_LABEL = 60
#: grid points checked on the tiny batch (a product bigger than this is checked on its first ones)
MAX_CHECKED_POINTS = 64


class UserFileError(ValueError):
    """A method file that cannot be used: the message names the file, the problem and the fix."""


def source_of(data: bytes) -> str:
    """The file's content hash: the first 20 hex digits of the sha256 of its bytes."""
    return hashlib.sha256(data).hexdigest()[:20]


@dataclass(frozen=True)
class UserFile:
    """A checked method file: its ``label``, ``kind`` (``"loss"`` or ``"method"``), ``grid``
    (keyword -> values, the default first), ``keywords`` (the tunable keywords and their
    defaults; ``inspect.Parameter.empty`` where none), ``target`` (the loss or the class) and
    ``source`` (its content hash)."""

    path: Path
    data: bytes = field(repr=False)
    source: str
    label: str
    kind: str
    grid: Dict[str, Tuple[Any, ...]]
    keywords: Dict[str, Any] = field(repr=False)
    target: Callable = field(repr=False)

    def points(self, budget: Optional[int] = None) -> List[Dict[str, Any]]:
        """The grid's points in order (a product, walked as :data:`mlpl_lab.protocol.tuning.GRIDS`
        are), each naming every grid keyword; the first ``budget`` of them (``[{}]`` without a grid)."""
        if not self.grid:
            return [{}]
        keys = list(self.grid)
        out = []
        for values in itertools.product(*(self.grid[k] for k in keys)):
            out.append(dict(zip(keys, values)))
            if budget is not None and len(out) >= budget:
                break
        return out

    def grid_size(self) -> int:
        """How many points the whole grid has."""
        return math.prod(len(v) for v in self.grid.values()) if self.grid else 1


def _fail(path: Path, problem: str, fix: str) -> UserFileError:
    return UserFileError(f"{path}: {problem}; {fix}")


def import_source(data: bytes, source: str, path: Path) -> types.ModuleType:
    """Execute the file's bytes as a module of its own (``mlpl_lab_user_<source>``, kept in
    ``sys.modules`` so classes it defines can be found again); an error in it is a
    :class:`UserFileError` with its line."""
    name = f"mlpl_lab_user_{source}"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_loader(name, loader=None, origin=str(path))
    module = importlib.util.module_from_spec(spec)
    module.__file__ = str(path)
    try:
        code = compile(data, str(path), "exec")
    except SyntaxError as exc:
        raise _fail(path, f"line {exc.lineno}: {exc.msg}", "fix the syntax (python -m py_compile FILE "
                    "shows the same error)") from None
    try:
        exec(code, module.__dict__)
    except Exception as exc:  # noqa: BLE001 — any error of the user's module is reported with its line
        tb = exc.__traceback__
        line = None
        while tb is not None:
            if tb.tb_frame.f_code.co_filename == str(path):
                line = tb.tb_lineno
            tb = tb.tb_next
        where = f" at line {line}" if line else ""
        raise _fail(path, f"importing it raised {type(exc).__name__}{where}: {exc}",
                    "the file must import cleanly on its own (python FILE runs it)") from None
    sys.modules[name] = module
    return module


def parts_of(module: types.ModuleType, path: Path) -> Tuple[str, Any, Callable, Dict[str, Any]]:
    """``(kind, label, target, grid)`` as the module declares them (not yet checked): the loss or
    the Method subclass, and ``LABEL``/``GRID`` from the module or, for a class, its attributes."""
    loss = module.__dict__.get("loss")
    cls = module.__dict__.get("METHOD")
    if cls is None and loss is None:
        own = [v for v in module.__dict__.values() if isinstance(v, type) and issubclass(v, Method)
               and v is not Method and v.__module__ == module.__name__ and "LABEL" in v.__dict__]
        if len(own) > 1:
            raise _fail(path, f"it defines several Method subclasses with a LABEL ({', '.join(c.__name__ for c in own)})",
                        "name the one to benchmark: METHOD = <the class>")
        cls = own[0] if own else None
    if loss is not None and cls is not None:
        raise _fail(path, "it defines both loss and METHOD", "keep one: a loss function for a plain loss, "
                    "METHOD for a Method subclass (state, several networks)")
    if loss is None and cls is None:
        raise _fail(path, "it defines neither loss nor METHOD",
                    "define def loss(logits, observed, ...) returning a scalar, or METHOD = <a subclass "
                    "of mlpl_lab.methods.base.Method>")
    target = loss if loss is not None else cls
    kind = "loss" if loss is not None else "method"
    label = module.__dict__.get("LABEL", getattr(target, "LABEL", None) if kind == "method" else None)
    grid = module.__dict__.get("GRID", getattr(target, "GRID", None) if kind == "method" else None)
    return kind, label, target, grid


def check_label(path: Path, label: Any, reserved: Mapping[str, str]) -> str:
    """``LABEL``: a short one-line text, not a course row's label or registered name
    (``reserved``: lower-cased name -> the course row it names)."""
    if label is None:
        raise _fail(path, "it has no LABEL", 'add LABEL = "<your method\'s name>" (the row\'s name in the table)')
    if not isinstance(label, str) or not label.strip():
        raise _fail(path, f"LABEL is {label!r}, not a text", 'give it a name, e.g. LABEL = "AN, unknowns at eps"')
    label = label.strip()
    if "\n" in label or len(label) > MAX_LABEL:
        raise _fail(path, f"LABEL is {len(label)} characters{' over several lines' if chr(10) in label else ''}",
                    f"use one line of at most {MAX_LABEL} characters")
    row = reserved.get(label.lower())
    if row is not None:
        raise _fail(path, f"LABEL {label!r} is the course row {row!r}'s name",
                    f"give your method its own name, e.g. LABEL = {label + ' (mine)'!r}")
    return label


def _signature(path: Path, target: Callable, what: str) -> inspect.Signature:
    try:
        return inspect.signature(target)
    except (TypeError, ValueError) as exc:
        raise _fail(path, f"the signature of {what} cannot be read ({exc})",
                    "define it with def (or as a class with an __init__)") from None


def loss_keywords(path: Path, fn: Any) -> Tuple[Dict[str, Any], bool]:
    """The loss's tunable keywords (name -> default, ``empty`` where none) and whether it takes
    ``**kwargs``; a loss that is not callable or does not take ``(logits, observed, ...)`` is an
    error."""
    if not callable(fn):
        raise _fail(path, f"loss is a {type(fn).__name__}, not a function", "define def loss(logits, observed, ...)")
    params = list(_signature(path, fn, "loss").parameters.values())
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    star = any(p.kind is p.VAR_POSITIONAL for p in params)
    shown = ", ".join(p.name for p in params) or "nothing"
    if len(positional) < 2 and not star:
        raise _fail(path, f"loss takes ({shown}), not (logits, observed, ...)",
                    "its first two arguments are the logits (N, C) and the observed labels (N, C)")
    if any(p.default is not p.empty for p in positional[:2]):
        raise _fail(path, f"loss gives a default to its first two arguments ({shown})",
                    "logits and observed are always passed: drop their defaults")
    rest = positional[2:] + [p for p in params if p.kind is p.KEYWORD_ONLY]
    return {p.name: p.default for p in rest}, any(p.kind is p.VAR_KEYWORD for p in params)


def method_keywords(path: Path, cls: Any) -> Tuple[Dict[str, Any], bool]:
    """The constructor's keywords of a Method subclass (name -> default) and whether it takes
    ``**kwargs``; anything but a subclass of Method is an error."""
    if not (isinstance(cls, type) and issubclass(cls, Method)):
        raise _fail(path, f"METHOD is {cls!r}, not a subclass of mlpl_lab.methods.base.Method",
                    "define class MyMethod(Method): ... and set METHOD = MyMethod")
    if cls is Method:
        raise _fail(path, "METHOD is the base class Method itself", "subclass it and override training_step")
    if "training_step" not in {k for c in cls.__mro__ if c is not Method for k in c.__dict__}:
        raise _fail(path, f"{cls.__name__} does not override training_step",
                    "define training_step(self, batch, epoch) returning (loss, logs)")
    if cls.__init__ is Method.__init__:  # the base only records its keywords: nothing would use them
        return {}, False
    params = list(_signature(path, cls.__init__, f"{cls.__name__}.__init__").parameters.values())[1:]
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    return {p.name: p.default for p in positional}, any(p.kind is p.VAR_KEYWORD for p in params)


def check_grid(path: Path, grid: Any, keywords: Mapping[str, Any], var_keyword: bool, what: str
               ) -> Dict[str, Tuple[Any, ...]]:
    """``GRID`` against the keywords ``what`` takes (module docstring); also every keyword
    without a default must be in it."""
    if grid is None:
        grid = {}
    if not isinstance(grid, dict):
        raise _fail(path, f"GRID is a {type(grid).__name__}", 'make it a dict, e.g. GRID = {"eps": [0.05, 0.1]}')
    out: Dict[str, Tuple[Any, ...]] = {}
    for key, values in grid.items():
        if not isinstance(key, str):
            raise _fail(path, f"GRID has the key {key!r}", f"its keys are the names of {what}'s keywords")
        if key in LOOP_KEYWORDS:
            raise _fail(path, f"GRID tunes {key!r}", f"the training loop passes {key} itself: drop it from GRID")
        if key not in keywords and not var_keyword:
            raise _fail(path, f"GRID key {key!r} is not a keyword of {what} (it takes "
                        f"{', '.join(k for k in keywords if k not in LOOP_KEYWORDS) or 'none'})",
                        f"add {key}=<default> to {what}'s signature, or drop it from GRID")
        if not isinstance(values, (list, tuple)) or not values:
            raise _fail(path, f"GRID[{key!r}] is {values!r}", "give a non-empty list of values, the default first")
        for v in values:
            ok = isinstance(v, (bool, int, str)) or (isinstance(v, float) and math.isfinite(v))
            if not ok:
                raise _fail(path, f"GRID[{key!r}] holds {v!r}", "a run spec holds numbers, texts and booleans only "
                            "(finite numbers)")
        if len(set(map(repr, values))) < len(values):
            raise _fail(path, f"GRID[{key!r}] lists a value twice ({list(values)})", "list each value once")
        default = keywords.get(key, inspect.Parameter.empty)
        if default is not inspect.Parameter.empty and values[0] != default:
            raise _fail(path, f"GRID[{key!r}] starts with {values[0]!r} but {what} declares {key}={default!r}",
                        "put the default first (it is the first trial and what an untuned design runs), "
                        "or change the default")
        out[key] = tuple(values)
    missing = [k for k, d in keywords.items() if d is inspect.Parameter.empty and k not in out
               and k not in LOOP_KEYWORDS]
    if missing:
        raise _fail(path, f"{what} has keyword(s) {missing} without a default and GRID does not set them",
                    "give each a default, or list its values in GRID")
    return out


def read_user_file(path, reserved: Mapping[str, str] | None = None) -> UserFile:
    """The method file at ``path`` read and its declarations checked (module docstring; the
    tiny-batch checks are :func:`mlpl_lab.methods.user_checks.check_user_file`'s); ``reserved``:
    lower-cased labels and names of the course rows -> the row (a clash is an error). Every
    problem is a :class:`UserFileError`."""
    path = Path(path).expanduser()
    if not path.is_file():
        raise UserFileError(f"{path}: no such file; give the path of your method's .py file")
    if path.suffix != ".py":
        raise UserFileError(f"{path}: not a .py file; write the method as Python (see the handbook's "
                            "'Rank your own method against the course')")
    return user_file_from(path.read_bytes(), path.resolve(), reserved)


def user_file_from(data: bytes, path: Path, reserved: Mapping[str, str] | None = None) -> UserFile:
    """:func:`read_user_file` on the file's bytes (``path``: where they came from, for messages)."""
    source = source_of(data)
    module = import_source(data, source, path)
    try:
        kind, label, target, grid = parts_of(module, path)
        label = check_label(path, label, reserved or {})
        if kind == "loss":
            keywords, var_kw = loss_keywords(path, target)
            what = "loss"
        else:
            keywords, var_kw = method_keywords(path, target)
            what = f"{target.__name__}.__init__"
        grid = check_grid(path, grid, keywords, var_kw, what)
    except UserFileError:
        forget(source)
        raise
    return UserFile(path, data, source, label, kind, grid, dict(keywords), target)


def forget(source: str) -> None:
    """Drop the module of ``source`` this process imported (a file found damaged leaves nothing)."""
    sys.modules.pop(f"mlpl_lab_user_{source}", None)
