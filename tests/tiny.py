"""The tiny training setup the loop and method tests share: a 96/48/48 split and a 2-epoch
``small_cnn(width=4)`` config (small enough for a test, big enough for every hook to run)."""
from mlpl_lab.data import make_splits
from mlpl_lab.engine.train import TrainConfig


def tiny_splits(seed: int = 3, **kw):
    kw.setdefault("regime", "single_positive")
    return make_splits(n_train=96, n_val=48, n_test=48, seed=seed, **kw)


def tiny_config(**kw) -> TrainConfig:
    """``TrainConfig`` of the tiny runs; a keyword replaces the default of that name."""
    base = dict(epochs=2, batch_size=32, lr=2e-3, model="small_cnn", model_kwargs={"width": 4},
                progress=False)
    base.update(kw)
    return TrainConfig(**base)


class PoisonedTruth:
    """A training set whose batches carry their TRUE labels flipped (the observed labels are
    untouched): a method that never reads the truth trains identically on it."""

    def __init__(self, ds):
        self.ds, self.observed, self.labels = ds, ds.observed, ds.labels

    def __len__(self):
        return len(self.ds)

    def get_batch(self, idx):
        batch = self.ds.get_batch(idx)
        batch["labels"] = 1 - batch["labels"]
        return batch
