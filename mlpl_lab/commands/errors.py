"""The two ways a command stops: a bad argument (exit code 2) or work that cannot finish (exit
code 1). :func:`mlpl_lab.cli.main` maps them to those exit codes."""
from __future__ import annotations


class UsageError(Exception):
    """A bad command-line argument (exit code 2, message names the fix)."""


class CommandError(Exception):
    """A command that cannot finish correctly (exit code 1, message says why and what to do)."""
