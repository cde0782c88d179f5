"""``mlpl-lab``: run the notebook series as reports; look after the run store.

Dispatch only. Each subcommand is one module under :mod:`mlpl_lab.commands` holding its options
(``add_parser``) and its handler: ``report``, ``plan``, ``train``, ``benchmark``, ``store``,
``pack``, ``course``. :func:`main` builds the parser from them, checks a command's arguments before any work
(its ``validate``), calls the handler, and maps the two errors of :mod:`mlpl_lab.commands.errors`
to exit codes: :class:`UsageError` 2, :class:`CommandError` 1, each with its message.
"""
from __future__ import annotations

import argparse

from .commands import benchmark, course, pack, plan, report, store, train
from .commands.errors import CommandError, UsageError
from .commands.series import environment_kept

#: the subcommands, in the order ``mlpl-lab --help`` lists them
COMMANDS = (report, plan, train, benchmark, store, pack, course)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="mlpl-lab", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    for command in COMMANDS:
        command.add_parser(sub)
    return parser


def main(argv=None) -> int:
    """Run one command. The environment variables a command sets for the kernels and workers it
    starts (the notebook being run, the profile, the progress file, FRESH) are put back as they
    were when it returns, so a caller in the same process -- a test, a notebook -- is not left
    logging its own reads as a chapter's."""
    parser = build_parser()
    args = parser.parse_args(argv)
    with environment_kept():
        return _main(parser, args)


def _main(parser, args) -> int:
    try:
        validate = getattr(args, "validate", None)
        if validate is not None:  # every argument checked before any work
            validate(args)
        return args.func(args)
    except UsageError as exc:
        parser.exit(2, f"mlpl-lab: error: {exc}\n")
    except CommandError as exc:
        parser.exit(1, f"mlpl-lab: error: {exc}\n")


if __name__ == "__main__":
    raise SystemExit(main())
