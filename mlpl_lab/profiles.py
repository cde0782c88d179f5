"""Run profiles, nanoGPT-style literal presets: ``smoke`` (CI), ``cpu`` (default), ``gpu``.

A notebook's ``parameters`` cell names a profile; the chapter module of the notebook turns
it into run specs with :meth:`Profile.spec`. Values are literals so papermill can inject any
of them. This module imports no torch (``mlpl-lab`` answers a bad argument at once).

* ``smoke``: seconds per notebook; proves the code runs and records finite, sane values.
* ``cpu``: a student's laptop (2 cores): the phenomena are visible; the whole series, 00–07,
  runs in 24.5 minutes with an empty run store (measured 2026-11-23, the README's timings).
* ``gpu``: bigger images, ResNet-18, more data, more epochs, three seeds.

**Seeds** mean one thing in every chapter: seed ``s`` draws its own data split (scenes),
its own observed labels and its own network initialisation (see :mod:`mlpl_lab.store`).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, Dict, List, Tuple

from .store import RunSpec  # imports no torch



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
    probes: Tuple[str, ...] = ("separation",)
    probe_size: int = 1024
    test_every_epoch: bool = True
    #: "scenes" (embedded) or a real dataset ("voc2012", "coco2014", "nuswide", "cub") read from
    #: ``data_root`` in ``data_layout`` ("cole", "voc_raw", "coco_json"): see mlpl_lab.data.real_splits
    dataset: str = "scenes"
    data_root: str | None = None
    data_layout: str = "cole"

    def train_settings(self, **overrides) -> Dict[str, Any]:
        """The training fields of a run spec (``overrides`` win: any TrainConfig field)."""
        out = dict(epochs=self.epochs, batch_size=self.batch_size, lr=self.lr, model=self.model,
                   model_kwargs=dict(self.model_kwargs), amp=self.amp, probes=list(self.probes),
                   probe_size=self.probe_size, test_every_epoch=self.test_every_epoch)
        out.update(overrides)
        return out

    def data_kwargs(self, **scene_overrides) -> Dict[str, Any]:
        """The ``data`` of a run spec: the scenes' sizes, or a real dataset's name, root,
        layout and image size (scene overrides other than ``image_size`` do not apply there)."""
        if self.dataset != "scenes":
            size = dict(scene_overrides).get("image_size", self.image_size)
            return dict(dataset=self.dataset, root=self.data_root, layout=self.data_layout,
                        image_size=size)
        return dict(n_train=self.n_train, n_val=self.n_val, n_test=self.n_test,
                    image_size=self.image_size, glyphs=self.glyphs) | dict(scene_overrides)

    def spec(self, method: str, method_params: Dict[str, Any] | None = None,
             regime: str = "single_positive", regime_params: Dict[str, Any] | None = None,
             seed: int | None = None, scene: Dict[str, Any] | None = None, init_from=None,
             **train_overrides):
        """The :class:`~mlpl_lab.store.RunSpec` of one run under this profile.

        The full-label oracle (``method="full"``) reads only the true labels, so its regime is
        recorded as ``"full"``: one oracle run per seed serves every regime."""

        if method == "full":
            regime, regime_params = "full", {}
        return RunSpec(method=method, method_params=dict(method_params or {}), regime=regime,
                       regime_params=dict(regime_params or {}),
                       seed=self.seeds[0] if seed is None else seed,
                       data=self.data_kwargs(**dict(scene or {})),
                       train=self.train_settings(**train_overrides), init_from=init_from)

    def as_dict(self) -> Dict[str, Any]:
        return asdict(self)


PROFILES: Dict[str, Profile] = {
    "smoke": Profile(name="smoke", n_train=256, n_val=128, n_test=128, image_size=32, glyphs="shapes",
                     epochs=2, batch_size=64, lr=2e-3, model="small_cnn",
                     model_kwargs={"width": 8}, seeds=[0, 1], test_every_epoch=False),
    # cpu: sized so the whole series (00-07) trains in half an hour on 2 cores with an empty
    # run store: width 16 (a single-network run in about 15 s; width 24 took 35 s for AN 73.3
    # / oracle 90.4 against 66.6 / 86.0 at width 16 and 8 epochs, measured 2026-11-23: the
    # AN gap stays) and 6 epochs (8 took 34 min for the series, 7 took 32.5); the test set
    # is scored once, on the best-val weights (the README's timings)
    "cpu": Profile(name="cpu", n_train=4000, n_val=1000, n_test=1000, image_size=32, glyphs="shapes",
                   epochs=6, batch_size=64, lr=2e-3, model="small_cnn", model_kwargs={"width": 16},
                   seeds=[0, 1, 2], probe_size=512, test_every_epoch=False),
    "gpu": Profile(name="gpu", n_train=20000, n_val=2000, n_test=4000, image_size=64, glyphs="shapes",
                   epochs=20, batch_size=128, lr=1e-3, model="resnet18", seeds=[0, 1, 2], amp=True),
}

PROFILE_NAMES = tuple(PROFILES)


def get_profile(name, **overrides) -> Profile:
    """``get_profile("cpu")``; ``get_profile("cpu", epochs=4)`` overrides any field."""
    if isinstance(name, Profile):
        return replace(name, **overrides) if overrides else name
    if name not in PROFILES:
        raise ValueError(f"unknown profile {name!r}; choose one of {sorted(PROFILES)}")
    unknown = set(overrides) - set(Profile.__dataclass_fields__)
    if unknown:
        raise ValueError(f"unknown profile field(s) {sorted(unknown)}; fields: "
                         f"{sorted(Profile.__dataclass_fields__)}")
    return replace(PROFILES[name], **overrides)
