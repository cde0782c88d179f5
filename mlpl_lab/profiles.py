"""Run profiles, nanoGPT-style literal presets: ``smoke`` (CI), ``cpu`` (default), ``gpu``.

A notebook's ``parameters`` cell names a profile; the next cell calls
``get_profile(profile, **overrides)``. Values are literals so papermill can inject any of them.

* ``smoke``: seconds per notebook; proves the code runs and records finite, sane values.
* ``cpu``: a student's laptop (2 cores): the phenomena are visible; the whole notebook
  series runs well under an hour.
* ``gpu``: bigger images, ResNet-18, more data, more epochs, several seeds.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, Dict, List

from .train import TrainConfig


@dataclass(frozen=True)
class Profile:
    name: str
    n_train: int
    n_val: int
    n_test: int
    image_size: int
    glyphs: str
    epochs: int
    batch_size: int
    lr: float
    model: str
    model_kwargs: Dict[str, Any] = field(default_factory=dict)
    seeds: List[int] = field(default_factory=lambda: [0])
    amp: bool = False

    def train_config(self, seed: int | None = None, **overrides) -> TrainConfig:
        """The :class:`TrainConfig` of this profile (``overrides`` win)."""
        cfg = dict(epochs=self.epochs, batch_size=self.batch_size, lr=self.lr, model=self.model,
                   model_kwargs=dict(self.model_kwargs), seed=self.seeds[0] if seed is None else seed,
                   amp=self.amp)
        cfg.update(overrides)
        return TrainConfig(**cfg)

    def data_kwargs(self) -> Dict[str, Any]:
        return dict(n_train=self.n_train, n_val=self.n_val, n_test=self.n_test,
                    image_size=self.image_size, glyphs=self.glyphs)

    def as_dict(self) -> Dict[str, Any]:
        return asdict(self)


PROFILES: Dict[str, Profile] = {
    "smoke": Profile(name="smoke", n_train=256, n_val=128, n_test=128, image_size=32, glyphs="shapes",
                     epochs=2, batch_size=64, lr=2e-3, model="small_cnn",
                     model_kwargs={"width": 8}),
    "cpu": Profile(name="cpu", n_train=4000, n_val=1000, n_test=1000, image_size=32, glyphs="shapes",
                   epochs=8, batch_size=64, lr=2e-3, model="small_cnn", model_kwargs={"width": 32}),
    "gpu": Profile(name="gpu", n_train=20000, n_val=2000, n_test=4000, image_size=64, glyphs="shapes",
                   epochs=20, batch_size=128, lr=1e-3, model="resnet18", seeds=[0, 1, 2], amp=True),
}


def get_profile(name: str, **overrides) -> Profile:
    """``get_profile("cpu")``; ``get_profile("cpu", epochs=4)`` overrides any field."""
    if name not in PROFILES:
        raise ValueError(f"unknown profile {name!r}; choose one of {sorted(PROFILES)}")
    unknown = set(overrides) - set(Profile.__dataclass_fields__)
    if unknown:
        raise ValueError(f"unknown profile field(s) {sorted(unknown)}; fields: "
                         f"{sorted(Profile.__dataclass_fields__)}")
    return replace(PROFILES[name], **overrides)
