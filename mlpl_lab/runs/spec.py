"""A run, fully described: :class:`RunSpec` and its key (the spec and its components' versions).

A :class:`RunSpec` holds the method and its hyperparameters, the label regime and its
parameters, the seed, the data settings and the training settings, and the specs it starts
from. Its **key** is a hash of the spec and the versions of exactly the components it uses
(:func:`mlpl_lab.runs.components.versions_of`: engine, data, model, head, method family, and
those of the runs it starts from), explicit numbers in :data:`mlpl_lab.core.numerics.VERSIONS`
bumped when a change alters what that component computes (CI's golden records guard them), so a
comment, a renamed file or a moved module changes no key, and a bump re-keys only the runs
that use the component.
"""
from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Dict, Optional



def _canonical(value: Any) -> Any:
    """JSON-able, order-independent form of a spec value (tuples become lists)."""
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, (list, tuple)):
        return [_canonical(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, float):
        return float(value)
    if hasattr(value, "item"):  # numpy / torch scalars
        return _canonical(value.item())
    raise TypeError(f"a run spec holds literals only (numbers, strings, lists, dicts); got "
                    f"{type(value).__name__}: {value!r}")


@dataclass(frozen=True, eq=False)
class RunSpec:
    """One training run, fully described (see the module docstring). Build one with
    :meth:`mlpl_lab.profiles.Profile.spec`; ``init_from`` names the run whose best weights a
    second stage starts from (LAC, every network whole); ``backbone_from`` names the pretraining
    run whose backbone every network of this run starts from, with a freshly initialised head
    (the lab's stand-in for an ImageNet backbone: :meth:`mlpl_lab.profiles.Profile.pretrain_spec`).
    Both are specs, so a run's key follows the run it starts from."""

    method: str
    method_params: Dict[str, Any] = field(default_factory=dict)
    regime: str = "single_positive"
    regime_params: Dict[str, Any] = field(default_factory=dict)
    seed: int = 0
    data: Dict[str, Any] = field(default_factory=dict)
    train: Dict[str, Any] = field(default_factory=dict)
    init_from: Optional["RunSpec"] = None
    backbone_from: Optional["RunSpec"] = None

    def as_dict(self) -> Dict[str, Any]:
        return {"method": self.method, "method_params": _canonical(self.method_params),
                "regime": self.regime, "regime_params": _canonical(self.regime_params),
                "seed": int(self.seed), "data": _canonical(self.data), "train": _canonical(self.train),
                "init_from": None if self.init_from is None else self.init_from.as_dict(),
                "backbone_from": None if self.backbone_from is None else self.backbone_from.as_dict()}

    @classmethod
    def from_dict(cls, d: Dict[str, Any]) -> "RunSpec":
        return cls(method=d["method"], method_params=dict(d["method_params"]), regime=d["regime"],
                   regime_params=dict(d["regime_params"]), seed=int(d["seed"]), data=dict(d["data"]),
                   train=dict(d["train"]),
                   init_from=None if d.get("init_from") is None else cls.from_dict(d["init_from"]),
                   backbone_from=None if d.get("backbone_from") is None else cls.from_dict(d["backbone_from"]))

    def canonical_json(self) -> str:
        return json.dumps(self.as_dict(), sort_keys=True, separators=(",", ":"))

    @property
    def key(self) -> str:
        """20 hex digits: the spec and its components' versions (this code's table)."""
        return self.key_at()

    def key_at(self, versions: Optional[Dict[str, int]] = None) -> str:
        """The key under another version table (a pack's manifest): the sha256 of the canonical
        spec and ``{component: version}`` of the components it uses."""
        from .components import versions_of

        h = hashlib.sha256(self.canonical_json().encode())
        h.update(("versions=" + json.dumps(versions_of(self, versions), sort_keys=True,
                                           separators=(",", ":"))).encode())
        return h.hexdigest()[:20]

    def scheme_1_key(self, numerics_version: int) -> str:
        """The key key scheme 1 gave this spec (one numerics version for the whole lab; before
        each component got its own version): what ``mlpl-lab pack migrate`` checks an old pack's runs against."""
        h = hashlib.sha256(self.canonical_json().encode())
        h.update(f"numerics={int(numerics_version)}".encode())
        return h.hexdigest()[:20]

    def __eq__(self, other) -> bool:
        return isinstance(other, RunSpec) and self.canonical_json() == other.canonical_json()

    def __hash__(self) -> int:
        return hash(self.canonical_json())

    def replace(self, **changes) -> "RunSpec":
        d = {"method": self.method, "method_params": self.method_params, "regime": self.regime,
             "regime_params": self.regime_params, "seed": self.seed, "data": self.data,
             "train": self.train, "init_from": self.init_from, "backbone_from": self.backbone_from}
        d.update(changes)
        return RunSpec(**d)

    def describe(self) -> str:
        """One line for progress and errors: method, regime, seed, model (with its settings) and
        epochs — enough to tell apart two runs of one chapter (a control trained longer, an
        LgConv row) — and the start (stage 2, pretrained backbone)."""
        hp = ", ".join(f"{k}={v}" for k, v in sorted(self.method_params.items()))
        rp = ", ".join(f"{k}={v}" for k, v in sorted(self.regime_params.items()))
        mk = ", ".join(f"{k}={v}" for k, v in sorted(self.train.get("model_kwargs", {}).items()))
        model = f" · {self.train['model']}({mk})" if "model" in self.train else ""
        epochs = f" · {self.train['epochs']} epochs" if "epochs" in self.train else ""
        return (f"{self.method}({hp}) · {self.regime}({rp}) · seed {self.seed}{model}{epochs}"
                + (" · stage 2" if self.init_from is not None else "")
                + (" · pretrained backbone" if self.backbone_from is not None else ""))
