"""Command-line entry points besides ``mlpl-lab`` (cli.py): ``python -m
mlpl_lab.commands.torchrun`` trains one run spec under torchrun. Top layer.
"""
