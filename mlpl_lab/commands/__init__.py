"""The command line: one module per ``mlpl-lab`` subcommand, each holding its argparse setup
(``add_parser``) and its handler (``cmd_<name>``) -- :mod:`.report`, :mod:`.plan`,
:mod:`.benchmark`, :mod:`.store`, :mod:`.pack`, :mod:`.course` -- and the steps they share, in
modules named for what they hold: :mod:`.errors` (the two exit codes), :mod:`.arguments` (value
types, ``--notebooks``, ``--out``, data and engine options), :mod:`.fresh` (``--fresh``),
:mod:`.series` (executing the notebook series), :mod:`.plan_first` (training the plan before the
notebooks), :mod:`.progress` (the progress lines), :mod:`.dask_engine` (``--workers`` /
``--scheduler``), :mod:`.benchmark_csv` (notebook 07's tables as CSV). ``mlpl_lab/cli.py``
only dispatches. Besides ``mlpl-lab``: ``python -m mlpl_lab.commands.torchrun`` trains one run
spec under torchrun. Top layer: may import anything below.
"""
