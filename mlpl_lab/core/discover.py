"""Import every module of a package so its ``@register_*`` decorators run.

Chapters add a loss or a method by adding a module; no shared ``__init__`` needs editing.
"""
from __future__ import annotations

import importlib
import pkgutil


def import_submodules(package_name: str, package_path) -> None:
    for info in sorted(pkgutil.iter_modules(package_path), key=lambda i: i.name):
        if not info.name.startswith("_"):
            importlib.import_module(f"{package_name}.{info.name}")
