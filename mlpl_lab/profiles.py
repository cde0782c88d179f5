"""Run profiles, nanoGPT-style literal presets: ``smoke`` (CI), ``cpu`` (default), ``gpu``,
``gpu_shape``.

A notebook's ``parameters`` cell names a profile; the chapter module of the notebook turns
it into run specs with :meth:`Profile.spec`. Values are literals so papermill can inject any
of them. This module imports no torch (``mlpl-lab`` answers a bad argument at once).

* ``smoke``: seconds per notebook; proves the code runs and records finite, sane values.
* ``cpu``: a student's laptop (2 cores): the phenomena are visible and the runs converge (the
  README's timings).
* ``gpu``: bigger images, ResNet-18, twice cpu's data, five seeds; a series sized for one evening on one GPU.
* ``gpu_shape``: the gpu profile's backbone, image size, AMP, NHWC and chapter designs at a CPU's
  sizes (512 images, 2 epochs, two seeds): ``make test-gpu-shape`` executes every notebook under it.

Every profile starts its runs from **the lab's pretrained backbone** (``init="pretrained"``, its
stand-in for the ImageNet backbone every paper fine-tunes): a run of the full-label oracle on
object-centric scenes, stored like any other run and named in each dependent spec
(``RunSpec.backbone_from``), whose backbone is copied into each run with a fresh head.
``get_profile("cpu", init="scratch")`` trains from random weights instead. Every run records
whether it converged (:mod:`mlpl_lab.core.convergence`).

**Seeds** mean one thing in every chapter: seed ``s`` draws its own data split (scenes),
its own observed labels and its own network initialisation (see :mod:`mlpl_lab.runs.store`).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import Any, Dict, List, Tuple

from .runs.spec import RunSpec  # imports no torch

#: how a run's networks start: the lab's pretrained backbone (default), random weights, or the
#: torchvision ImageNet weights named in ``model_kwargs["weights"]`` (real datasets, gpu)
INITS = ("pretrained", "scratch", "imagenet")
#: model_kwargs that shape the head, not the backbone (a pretraining run ignores them)
HEAD_KWARGS = ("head", "head_kwargs", "lgconv", "lgconv_gamma_init")
#: the keys of ``Profile.pretrain``
PRETRAIN_KEYS = ("glyphs", "max_objects", "n_train", "n_val", "n_test", "epochs", "seed")



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
    #: the LR schedule of every run (TrainConfig.lr_schedule); a method may override it
    lr_schedule: str = "constant"
    #: where a run's networks start (:data:`INITS`): ``"pretrained"`` copies the backbone of the
    #: profile's pretraining run (:meth:`pretrain_spec`) with a fresh head, like ImageNet transfer
    init: str = "pretrained"
    #: the pretraining run: object-centric scenes (one object each) of a glyph set, their sizes,
    #: epochs and seed (its own seed: disjoint from every split of the chapters)
    pretrain: Dict[str, Any] = field(default_factory=dict)
    #: NHWC networks and batches (TrainConfig.channels_last): the same numbers up to float rounding, faster convolutions
    #: (1.5x for the small CNN on the 2-core CPU, measured)
    channels_last: bool = False
    #: the scenes' generation settings (overrides of :func:`mlpl_lab.data.scenes.make_scenes`;
    #: sizes are fractions of the image side, so one setting serves 32 and 64 px); a chapter's
    #: own ``scene=`` overrides it. Empty: the generator's defaults
    scene: Dict[str, Any] = field(default_factory=dict)
    #: ``mlpl-lab report``: the seconds one notebook cell may run; past them the report stops that
    #: notebook's kernel, names the cell, and goes on with the next notebook. Generous, as one cell
    #: may train all of a notebook's runs: by default 12 h, several times the longest cold cpu
    #: notebook (measured in notebooks/timings.json)
    cell_timeout_s: int = 43_200
    #: whether a row whose pilot gains trains longer on every seed (:func:`mlpl_lab.protocol.pilots.settle`):
    #: off under smoke, whose two-epoch runs prove the code runs and are not meant to converge
    lengthen_rows: bool = True

    def __post_init__(self):
        if self.init not in INITS:
            raise ValueError(f"init must be one of {INITS} (got {self.init!r}); 'scratch' trains from "
                             "random weights, 'pretrained' from the lab's pretrained backbone")
        if self.init == "pretrained":
            missing = [k for k in PRETRAIN_KEYS if k not in self.pretrain]
            unknown = [k for k in self.pretrain if k not in PRETRAIN_KEYS]
            if missing or unknown:
                raise ValueError(f"profile {self.name!r}: init='pretrained' needs pretrain={{...}} with "
                                 f"exactly the keys {PRETRAIN_KEYS} (missing {missing}, unknown {unknown}); "
                                 "or use init='scratch'")
        if self.init == "imagenet" and not dict(self.model_kwargs).get("weights"):
            raise ValueError("init='imagenet' needs model_kwargs={'weights': 'IMAGENET1K_V1'} (a torchvision "
                             "ResNet); the small CNN has no ImageNet weights: use 'pretrained' or 'scratch'")

    def train_settings(self, **overrides) -> Dict[str, Any]:
        """The training fields of a run spec (``overrides`` win: any TrainConfig field)."""
        out = dict(epochs=self.epochs, batch_size=self.batch_size, lr=self.lr, model=self.model,
                   model_kwargs=dict(self.model_kwargs), amp=self.amp, probes=list(self.probes),
                   probe_size=self.probe_size, test_every_epoch=self.test_every_epoch,
                   lr_schedule=self.lr_schedule)
        if self.channels_last:  # only when set: the other profiles' run keys stay as they were
            out["channels_last"] = True
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
                    image_size=self.image_size, glyphs=self.glyphs) | dict(self.scene) | dict(scene_overrides)

    def spec(self, method: str, method_params: Dict[str, Any] | None = None,
             regime: str = "single_positive", regime_params: Dict[str, Any] | None = None,
             seed: int | None = None, scene: Dict[str, Any] | None = None, init_from=None,
             **train_overrides):
        """The :class:`~mlpl_lab.runs.store.RunSpec` of one run under this profile.

        The full-label oracle (``method="full"``) reads only the true labels, so its regime is
        recorded as ``"full"``: one oracle run per seed serves every regime. Under
        ``init="pretrained"`` the spec names the pretraining run its backbone starts from
        (``backbone_from``; a second stage, ``init_from``, starts from its first stage instead)."""

        if method == "full":
            regime, regime_params = "full", {}
        train = self.train_settings(**train_overrides)
        data = self.data_kwargs(**dict(scene or {}))
        backbone = None
        if self.init == "pretrained" and init_from is None:
            backbone = self.pretrain_spec(train["model"], train["model_kwargs"], data["image_size"])
        return RunSpec(method=method, method_params=dict(method_params or {}), regime=regime,
                       regime_params=dict(regime_params or {}),
                       seed=self.seeds[0] if seed is None else seed,
                       data=data, train=train, init_from=init_from, backbone_from=backbone)

    def pretrain_spec(self, model: str | None = None, model_kwargs: Dict[str, Any] | None = None,
                      image_size: int | None = None, **pretrain_overrides) -> RunSpec:
        """The pretraining run: the full-label oracle on object-centric scenes (one object each,
        :attr:`pretrain`), with the run's backbone (``model`` and its ``model_kwargs`` less the
        head's, :data:`HEAD_KWARGS`) at the run's image size, and the profile's optimiser and
        schedule. One such run per profile and backbone serves every chapter; only its backbone
        is copied into a run (``RunSpec.backbone_from``)."""
        pre = dict(self.pretrain) | dict(pretrain_overrides)
        missing = [k for k in PRETRAIN_KEYS if k not in pre]
        if missing:
            raise ValueError(f"pretraining needs {PRETRAIN_KEYS}; missing {missing}")
        kwargs = {k: v for k, v in dict(self.model_kwargs if model_kwargs is None else model_kwargs).items()
                  if k not in HEAD_KWARGS}
        train = self.train_settings(epochs=pre["epochs"], model=model or self.model, model_kwargs=kwargs,
                                    probes=[], test_every_epoch=False)
        data = dict(n_train=pre["n_train"], n_val=pre["n_val"], n_test=pre["n_test"],
                    image_size=image_size or self.image_size, glyphs=pre["glyphs"],
                    max_objects=pre["max_objects"])
        return RunSpec(method="full", regime="full", seed=pre["seed"], data=data, train=train)

    def as_dict(self) -> Dict[str, Any]:
        return asdict(self)


#: the pretraining data of each profile (chosen by measurement in notebook 01, see
#: ``mlpl_lab.chapters.assume_negative.PRETRAIN_CANDIDATES``): single-object scenes of the ten
#: digit glyphs — classes disjoint from the twenty shape classes every chapter learns — with
#: their own seed (scene seeds 3000-3002, far from the chapters' splits)
PRETRAIN_DIGITS = {"glyphs": "digits", "max_objects": 1, "seed": 1000}

#: scenes with headroom, chosen by measurement in protocol/scenes_choice.py (its rule reads
#: only the full-label oracle's and AN's validation mAP; record: benchmarks/records/
#: scene_candidates_cpu.json, measured at the cpu profile's 54 epochs, shown in notebook 01; the
#: candidate "harder"): colour jitter, pixel noise, smaller objects, up to six of them, at least
#: 20 % of each visible. The rule is read at the profile's own length: the choice depends on it
#: (scene_candidates_cpu_36epochs.json holds the same rule read at 36 epochs)
SCENES_WITH_HEADROOM = {"colour_jitter": 0.25, "noise": 0.15, "size_range": [0.2, 0.4], "max_objects": 6,
                        "min_visible": 0.2}

PROFILES: Dict[str, Profile] = {
    "smoke": Profile(name="smoke", n_train=256, n_val=128, n_test=128, image_size=32, glyphs="shapes",
                     epochs=2, batch_size=64, lr=2e-3, model="small_cnn",
                     model_kwargs={"width": 8}, seeds=[0, 1], test_every_epoch=False,
                     cell_timeout_s=1_800,  # a whole smoke notebook takes under 2 min (course.yml)
                     lengthen_rows=False,
                     pretrain=PRETRAIN_DIGITS | {"n_train": 256, "n_val": 128, "n_test": 128, "epochs": 2}),
    # cpu: a student's laptop (2 cores). Runs start from the pretrained backbone and train until
    # their validation curve flattens: 54 epochs of cosine decay at lr 2e-3 is where AN, the
    # slowest to flatten, meets the convergence criterion (record:
    # benchmarks/records/convergence_probe_cpu.json; the handbook's "Converged runs" tells how the
    # length was found). Five seeds, so the key comparisons are decided by paired t-intervals; the
    # test set is scored once, on the best-val weights
    "cpu": Profile(name="cpu", n_train=4000, n_val=1000, n_test=1000, image_size=32, glyphs="shapes",
                   epochs=54, batch_size=64, lr=2e-3, model="small_cnn", model_kwargs={"width": 16},
                   seeds=[0, 1, 2, 3, 4], probe_size=512, test_every_epoch=False, lr_schedule="cosine",
                   channels_last=True, scene=SCENES_WITH_HEADROOM,
                   pretrain=PRETRAIN_DIGITS | {"n_train": 8000, "n_val": 1000, "n_test": 1000, "epochs": 8}),
    # gpu: a series sized for a course, one evening on one GPU (`mlpl-lab plan --profile gpu` projects
    # it from the newest GPU check's record). What each choice costs against the first gpu design
    # (20,000 training images, 20 epochs, the test set scored every epoch, pretraining on 40,000
    # for 10 epochs, the full benchmark grid: 1,646 runs, 43 h on one H100 at its measured rate):
    # * 8,000 training images (2x cpu's): a method's gap may shrink or grow with data, so the gpu
    #   numbers answer "at 8,000 scenes, ResNet-18, 64 px", not at 20,000;
    # * 10 epochs of cosine decay: the one gpu run the check timed peaked at epoch 10 of 20; a run
    #   that has not flattened is flagged by its convergence record, never hidden;
    # * the test set scored once, on the best-validation weights (as cpu): no per-epoch test curve;
    # * pretraining on 20,000 single-object scenes for 8 epochs (one run, shared by every chapter);
    # * chapter 07's grid is cpu's shape (chapters/benchmark/design.py) and LAC's stages 7 + 3 epochs
    #   (protocol/lac_stages.py). Five seeds stay: the key comparisons are decided by paired intervals
    "gpu": Profile(name="gpu", n_train=8000, n_val=2000, n_test=4000, image_size=64, glyphs="shapes",
                   epochs=10, batch_size=128, lr=1e-3, model="resnet18", seeds=[0, 1, 2, 3, 4], amp=True,
                   lr_schedule="cosine", test_every_epoch=False, scene=SCENES_WITH_HEADROOM,
                   cell_timeout_s=43_200,  # 12 h per cell: notebook 07's grid (`mlpl-lab plan --profile gpu` projects it)
                   pretrain=PRETRAIN_DIGITS | {"n_train": 20000, "n_val": 2000, "n_test": 2000, "epochs": 8}),
    # gpu_shape: the gpu profile's shapes at a CPU's sizes, so its code paths execute without a
    # GPU: ResNet-18 at 64 px, AMP (bfloat16 autocast where the CPU has it natively, float32
    # elsewhere: engine/device.py), NHWC, and every chapter's gpu design (protocol/common.py: DESIGN_OF; LAC at 128 px), on 512 images, 2 epochs
    # and two seeds. It measures nothing: on two seeds every claim is an observation
    "gpu_shape": Profile(name="gpu_shape", n_train=512, n_val=128, n_test=128, image_size=64,
                         glyphs="shapes", epochs=2, batch_size=128, lr=1e-3, model="resnet18",
                         seeds=[0, 1], amp=True, lr_schedule="cosine", channels_last=True,
                         probe_size=128, scene=SCENES_WITH_HEADROOM,
                         pretrain=PRETRAIN_DIGITS | {"n_train": 1024, "n_val": 128, "n_test": 128, "epochs": 1}),
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
