"""Run by tests/test_distributed.py under torchrun (2 ranks): every registered method (stage-1
ones; stage 2 needs a stored stage 1) trains one smoke epoch; rank 0 prints the failures."""
import torch, traceback
from mlpl_lab.engine import distributed
from mlpl_lab.methods import METHODS, build_method
from mlpl_lab.profiles import get_profile
from mlpl_lab.runs.splits_cache import build_splits
from mlpl_lab.runs.validation import config_of
from mlpl_lab.engine.train import fit
distributed.init_from_env()
P = get_profile("smoke")
bad = []
for name in sorted(METHODS):
    m = build_method(name)
    if getattr(m, "requires_init_from", False): continue
    head = getattr(m, "required_head", None)
    kw = {"model_kwargs": {"width": 8, "head": head}} if head else {}
    spec = P.spec(name, seed=0, epochs=1, probes=[], **kw)
    s = build_splits(spec)
    try:
        fit(m, s.train, s.val, s.test, config_of(spec, progress=False, device="cpu"))
    except Exception as e:
        bad.append((name, repr(e)[:200]))
if distributed.rank() == 0:
    print("FAILED", bad, flush=True)
distributed.shutdown()
