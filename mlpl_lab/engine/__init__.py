"""The one training loop and what it needs: the loop and its configuration (train),
torchrun/DDP (distributed) and peak-memory measurement (memory). Imports the core,
data, losses, models and methods; never the run store or anything above it.
"""
