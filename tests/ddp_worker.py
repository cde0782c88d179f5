"""Run by tests/test_distributed.py under ``torchrun --nproc_per_node=2`` (gloo, CPU).

Each rank trains one epoch of AN on a BatchNorm-free small CNN and saves: the indices of its
first batch, the gradients after the first step (already averaged across ranks: they are read
in ``on_step_end``, after the all-reduce and before the next ``zero_grad``) and, for ROLE and
LL-Cp, the method state at the end (it must be identical on every rank).
"""
import os
import sys

import torch

from mlpl_lab.engine import distributed
from mlpl_lab.methods import build_method
from mlpl_lab.profiles import get_profile
from mlpl_lab.runs.splits_cache import build_splits
from mlpl_lab.runs.validation import config_of
from mlpl_lab.engine.train import fit

out = sys.argv[1]
distributed.init_from_env()
r = distributed.rank()
P = get_profile("smoke")
spec = P.spec("an", seed=0, epochs=1, probes=[], augment="none",
              model_kwargs={"width": 8, "norm": "none"})
splits = build_splits(spec)
cfg = config_of(spec, progress=False, device="cpu")

method = build_method("an")
seen, grads = [], {}
step_fn, end_fn = method.training_step, method.on_step_end


def training_step(batch, epoch):
    seen.append(batch["index"].clone())
    return step_fn(batch, epoch)


def on_step_end(step):
    if step == 0:
        grads.update({k: p.grad.detach().clone() for k, p in method.net.named_parameters()})
    end_fn(step)


method.training_step, method.on_step_end = training_step, on_step_end
fit(method, splits.train, splits.val, splits.test, cfg)
state = {"first_indices": seen[0], "all_indices": torch.cat(seen), "grads": grads}

for name, hp in (("role", {"expected_num_pos": 2.0}), ("ll_cp", {})):
    m = build_method(name, **hp)
    fit(m, splits.train, splits.val, splits.test, config_of(P.spec(name, seed=0, epochs=2, probes=[], restore_best=False, test_every_epoch=True),
                                                              progress=False, device="cpu"))
    state[name] = (m.label_logits.detach().clone() if name == "role" else m.labels.clone())
    if name == "role":
        state["role_net"] = {k: v.clone() for k, v in m.net.state_dict().items()}
torch.save(state, os.path.join(out, f"rank{r}.pt"))
distributed.shutdown()
