"""The method catalogue: one entry per method row the lab shows (its label, registered method and
fixed hyperparameters, family, chapters, tuning grid, colour, citation and paper claim), read by
every chapter, the palette and the tuning stage (:mod:`mlpl_lab.catalogue.entries`).

It sits at the methods' layer, beside :mod:`mlpl_lab.methods` rather than in it, so that reading a
label never imports torch (the command line answers a bad argument without it). It may import
``core`` (the bibliography, the regime table) and, inside a function, the method registry.

Other modules name a row as ``LABEL.<key>`` (``LABEL.gr == "GR"``), never by retyping its label.
A method from outside the package joins with :func:`register` (one :class:`Entry`).
"""
from .entries import (ENTRIES, GRIDS, LABEL, Entry, all_entries, by_label, citation_aliases,  # noqa: F401
                      colours, entry, grids, in_chapter, name_labels, paper_claims, register, unregister)
