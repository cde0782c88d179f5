"""The numerics versions: one per component that decides a run's numbers.

A run's key (:attr:`mlpl_lab.runs.spec.RunSpec.key`) is a hash of its spec and the versions of
**exactly the components it uses** (:func:`mlpl_lab.runs.components.components`): the engine,
the data it draws, its model and head, its method's family, and those of the runs it starts
from (``init_from``, ``backbone_from``). Each version is an explicit number in :data:`VERSIONS`,
**bumped by hand when a change alters what that component computes** (a loss, a method's update,
the scenes a seed draws, the training loop's order of operations, an initialisation). Bumping
one re-keys only the runs that use it (and the runs starting from them): a fix in PU-MLC's loss
retrains the PU-MLC runs, not LAC, CLS and the zoo. A comment, a docstring, a renamed file or a
moved module changes no key, so stored runs and a shipped course pack stay valid across refactors.

CI guards the table: ``tests/test_goldens.py`` retrains a few short smoke runs (one per method
family, both stages of LAC, a two-network method, PU-MLC) and compares them with the golden
records in ``tests/goldens/``; each record names the components it guards and their versions. A
change that alters a record fails with a message naming the component(s) to bump (those of the
failing records that no passing record shares), then: regenerate the goldens (``python
tests/goldens.py --write``) and retrain what the bump re-keys (``mlpl-lab plan --bump NAME`` says
how many runs and how long). The comparison is bitwise where this machine's environment matches
the goldens' and within a stated tolerance elsewhere.

Key schemes: :data:`KEY_SCHEME` 2 is this table. Scheme 1 (the lab's first) hashed the spec and one
``NUMERICS_VERSION`` for the whole lab (its last value, 2, is :data:`SCHEME_1_NUMERICS`); a pack
of scheme 1 is re-keyed without retraining by ``mlpl-lab pack migrate IN OUT`` (the numerics of
every component at version 1 here are those of numerics version 2).

This module imports nothing heavy, so reading the versions never imports torch.
"""
from __future__ import annotations

import ast
from pathlib import Path
from typing import Dict

#: the key scheme this code computes (see the module docstring); packs carry it in their manifest
KEY_SCHEME = 2
#: the single numerics version of key scheme 1 whose numbers the components' version 1 computes
SCHEME_1_NUMERICS = 2

#: bump a component's version when a change alters what it computes (then regenerate the goldens
#: and retrain the runs it re-keys). Every component starts at 1: the numerics of scheme 1's
#: numerics version 2 (1: run keys without the source hash; 2: PU-MLC's mixup
#: regulariser exact on both sides).
VERSIONS: Dict[str, int] = {
    # the training loop, optimiser and schedules, augmentation, evaluation and probes, initialisation
    # (engine/, methods/base.py, methods/probes.py, data/augment.py)
    "engine": 1,
    # the synthetic scenes a seed draws and their train/val/test split (data/scenes.py, glyphs.py, splits.py)
    "data.scenes": 1,
    # a real dataset's loading and splits (data/real.py, real_splits.py)
    "data.real": 1,
    # the observed labels a regime draws from the true ones (core/regimes.py)
    "data.regimes": 1,
    # models/small_cnn.py: the cpu and smoke profiles' backbone
    "model.small_cnn": 1,
    # models/resnet.py: resnet18 and resnet50 (the gpu profile, real datasets)
    "model.resnet": 1,
    # models/lgconv.py: PU-MLC's local-global convolution (model_kwargs lgconv=True)
    "model.lgconv": 1,
    # models/heads.py: the linear classifier head (every model without another head)
    "head.linear": 1,
    # models/label_query.py: LAC's label-query (transformer decoder) head
    "head.label_query": 1,
    # models/boostlu.py: BoostLU's head (1x1-conv class activation map, positive part x alpha, GAP)
    "head.boostlu": 1,
    # method families (mlpl_lab.runs.components.method_family: the module that registers the
    # method, or for one network trained with one registered loss, the loss's module)
    "method.basic": 1,            # losses/basic.py: full labels' BCE (pretraining, oracle) and AN
    "method.cole": 1,             # losses/cole.py: WAN, AN-LS, EPR, ROLE's loss
    "method.robust": 1,           # losses/robust.py: focal, ASL, Hill, SPLC
    "method.framework": 1,        # losses/framework.py: GR Loss's framework as EM, Hill, SPLC
    "method.entropy": 1,          # losses/entropy.py: EM
    "method.partial": 1,          # losses/partial.py: partial BCE (PU-MLC's chapter baseline)
    "method.opml": 1,             # methods/opml.py, losses/opml.py: OPML, OPML-SP, ZLPR
    "method.gr": 1,               # methods/gr.py, losses/gr.py: GR Loss and its ablations
    "method.cls": 1,              # methods/cls.py: CLS and its variants (two networks)
    "method.coteaching": 1,       # methods/coteaching.py: Co-teaching(+), JoCoR
    "method.lac": 1,              # methods/lac.py, losses/lac.py: LAC's stages, PLC, the queue
    "method.pu_mlc": 1,           # methods/pu_mlc.py, losses/pu.py: PU-MLC, its ablations, vPU
    "method.large_loss": 1,       # methods/large_loss.py, losses/large_loss.py: LL-R, LL-Ct, LL-Cp
    "method.expected_negative": 1,  # methods/expected_negative.py, losses/pseudo_negative.py: EN
    "method.role": 1,             # methods/role.py: ROLE's label matrix
    "method.apl": 1,              # methods/apl.py: EM+APL's pseudo-labels
    "method.crisp": 2,            # methods/crisp.py, losses/crisp.py: Crisp's prior estimator and risk
    "method.cardinality": 2,      # methods/cardinality.py, losses/cardinality.py: top-k pseudo-labels from cardinality
    # methods/user_method.py: how a researcher's method file trains (benchmark --add); the file's
    # own code is keyed by its content hash in the spec, not by this version
    "method.user_method": 1,
}


def versions_on_disk() -> Dict[str, int]:
    """:data:`VERSIONS` as the file on disk says now (not as this process imported it): how
    ``mlpl-lab report`` notices a version changing while a notebook runs."""
    tree = ast.parse(Path(__file__).read_text())
    for node in tree.body:
        target = node.target if isinstance(node, ast.AnnAssign) else (
            node.targets[0] if isinstance(node, ast.Assign) and len(node.targets) == 1 else None)
        if getattr(target, "id", None) == "VERSIONS" and node.value is not None:
            return {str(k): int(v) for k, v in ast.literal_eval(node.value).items()}
    raise RuntimeError(f"{__file__} defines no VERSIONS")
