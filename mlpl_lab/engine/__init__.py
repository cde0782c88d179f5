"""The one training loop and what it needs: the loop, its configuration and evaluation (train),
the weights a run starts from (init), checkpoints and resuming (checkpoint), torchrun/DDP behind
one object (distributed) and peak-memory measurement (memory). Imports the core, data, losses,
models and methods; never the run store or anything above it.
"""
