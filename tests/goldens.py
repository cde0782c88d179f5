"""Golden records: what a few short smoke runs compute, committed so CI notices a change of numerics.

A run's key is its spec and the versions of the components it uses
(:data:`mlpl_lab.core.numerics.VERSIONS`, :mod:`mlpl_lab.runs.components`; no source hash), so a
change that alters what a component computes must bump that component's version; otherwise
stored runs and the shipped course pack would be served for code that no longer computes them.
These records catch such a change: each holds a frozen spec (one per method family: AN's plain
loss, GR Loss, OPML, CLS's two networks, LAC's two stages, PU-MLC, EM's expected negatives, the
large-loss selection), **the components it guards and their versions**, every epoch's metrics
and the sha256 of the best weights, made at one thread in the environment named in the file (or,
for a record added later on another machine, in the record's own ``environment``).
``tests/test_goldens.py`` retrains each spec and compares; a difference names the component(s)
to bump (:func:`suspects`: those of the failing records that no agreeing record uses).

    python tests/goldens.py --write          # regenerate every record (after bumping a version)
    python tests/goldens.py --add NAME ...   # add the named specs' records, made on this machine

Comparison: **bitwise** (every number equal, the weights' sha256 equal) where this machine's
environment matches the record's (:data:`BITWISE_FIELDS`; :func:`environment_of`), else within :data:`TOLERANCE` (metrics
in mAP points, losses relative), and the failure says which was applied.
"""
from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import os
import sys
import tempfile
from pathlib import Path
from typing import Any, Dict, Iterator, List, Tuple

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

GOLDEN_FILE = Path(__file__).resolve().parent / "goldens" / "records.json"
#: the threads every golden run trains with (set, then restored)
THREADS = 1
#: the environment fields that must match for a bitwise comparison
BITWISE_FIELDS = ("torch", "device", "threads", "cpu_capability", "cpu")
#: elsewhere: |a - b| <= abs + rel * |b| for every number of every epoch
TOLERANCE = {"abs": 0.5, "rel": 0.02}
#: history fields that measure the machine, not the numerics
MACHINE_FIELDS = ("seconds", "train_seconds", "peak_memory_mib", "world_size", "lr_wall")


def _specs() -> Dict[str, Any]:
    """The frozen specs (built once, here, then kept in the JSON: a later change to a profile or a
    chapter design does not move the goldens)."""
    from mlpl_lab.chapters import lac as lac_chapter
    from mlpl_lab.chapters.pu_mlc import regime_of
    from mlpl_lab.profiles import get_profile

    P = get_profile("smoke", n_train=128, n_val=64, n_test=64, seeds=[0],
                    pretrain={"glyphs": "digits", "max_objects": 1, "seed": 1000, "n_train": 128,
                              "n_val": 64, "n_test": 64, "epochs": 1})
    lac2 = lac_chapter.row_spec(P, "two-stage + queue (LAC)", seed=0)
    pu_regime, pu_params = regime_of("pu", 0.5)
    return {
        "pretraining (full labels)": P.pretrain_spec(),
        "AN": P.spec("an"),
        "GR Loss": P.spec("gr"),
        "OPML-SP": P.spec("opml_sp"),
        "CLS (two networks)": P.spec("cls"),
        "EM": P.spec("em"),
        "LL-R": P.spec("ll_r"),
        "LAC stage 1 (+PLC)": lac2.init_from,
        "LAC stage 2": lac2,
        "PU-MLC": P.spec("pu_mlc", regime=pu_regime, regime_params=pu_params),
        "Crisp": P.spec("crisp"),
        "label cardinality (P(k))": P.spec("cardinality", {"grain": "distribution"}),
    }


def cpu_identity() -> str:
    """The CPU the numbers were made on, as far as its kernels depend on it: family, model and
    stepping, cache size and the vector-ISA flags (AVX*, AMX, FMA, F16C) from /proc/cpuinfo.
    torch's ``cpu_capability`` alone is too coarse: two AVX512 machines of other models gave
    numbers that differ in the last bits (2026-11-26), within :data:`TOLERANCE`. Off Linux:
    ``platform.processor()``."""
    import platform

    try:
        first = Path("/proc/cpuinfo").read_text().split("\n\n")[0]
    except OSError:
        return platform.processor() or "unknown"
    fields = {k.strip(): v.strip() for k, _, v in (line.partition(":") for line in first.splitlines())}
    isa = sorted(f for f in fields.get("flags", "").split() if f.startswith(("avx", "amx", "fma", "f16c")))
    return (f"family {fields.get('cpu family', '?')} model {fields.get('model', '?')} stepping "
            f"{fields.get('stepping', '?')}; cache {fields.get('cache size', '?')}; {' '.join(isa)}")


def environment() -> Dict[str, Any]:
    import torch

    return {"torch": torch.__version__.split("+")[0], "device": "cpu", "threads": THREADS,
            "cpu_capability": torch.backends.cpu.get_cpu_capability(), "cpu": cpu_identity()}


@contextlib.contextmanager
def _isolated() -> Iterator[Path]:
    """A temporary store and cache, one thread, float32 training (``MLPL_LAB_CPU_PRECISION``: the
    goldens are fp32 whatever the switch says), restored afterwards."""
    import torch

    from mlpl_lab.runs import splits_cache

    names = ("MLPL_LAB_DATA", "MLPL_LAB_PROGRESS", "MLPL_LAB_CPU_PRECISION")
    before = tuple(os.environ.get(n) for n in names) + (torch.get_num_threads(),)
    with tempfile.TemporaryDirectory(prefix="goldens-") as tmp:
        os.environ["MLPL_LAB_DATA"] = tmp
        os.environ["MLPL_LAB_PROGRESS"] = "0"
        os.environ["MLPL_LAB_CPU_PRECISION"] = "fp32"
        torch.set_num_threads(THREADS)
        splits_cache.clear_caches()
        try:
            yield Path(tmp)
        finally:
            splits_cache.clear_caches()
            torch.set_num_threads(before[-1])
            for name, value in zip(names, before[:-1]):
                if value is None:
                    os.environ.pop(name, None)
                else:
                    os.environ[name] = value


def _weights_sha256(blob: Dict[str, Any]) -> str:
    """sha256 over every tensor of the stored weights, in key order (independent of torch.save's
    container bytes)."""
    import torch

    h = hashlib.sha256()

    def walk(prefix: str, value: Any) -> None:
        if isinstance(value, torch.Tensor):
            h.update(prefix.encode())
            h.update(value.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes()
                     if value.numel() else b"")
        elif isinstance(value, dict):
            for k in sorted(value, key=str):
                walk(f"{prefix}/{k}", value[k])
        elif isinstance(value, (list, tuple)):
            for i, v in enumerate(value):
                walk(f"{prefix}/{i}", v)
        else:
            h.update(f"{prefix}={value!r}".encode())

    walk("", blob)
    return h.hexdigest()


def _numbers(history: List[Dict[str, Any]]) -> List[Dict[str, float]]:
    out = []
    for row in history:
        out.append({k: float(v) for k, v in sorted(row.items())
                    if k not in MACHINE_FIELDS and isinstance(v, (int, float)) and not isinstance(v, bool)})
    return out


def record(spec) -> Dict[str, Any]:
    """Train ``spec`` (and what it starts from) in the current store; its golden record."""
    from mlpl_lab.runs import ensure
    from mlpl_lab.runs.components import versions_of

    run = ensure.ensure([spec], quiet=True)[0]
    return {"spec": spec.as_dict(), "components": versions_of(spec), "best_epoch": run.best_epoch,
            "history": _numbers(run.history), "weights_sha256": _weights_sha256(run.weights())}


def make() -> Dict[str, Any]:
    from mlpl_lab.core.numerics import KEY_SCHEME

    with _isolated():
        runs = {name: record(spec) for name, spec in _specs().items()}
    return {"key_scheme": KEY_SCHEME, "environment": environment(), "runs": runs}


def add(stored: Dict[str, Any], names) -> Dict[str, Any]:
    """``stored`` with the records of the specs ``names`` (keys of :func:`_specs` not stored yet)
    made now, each carrying this machine's environment (the file's stays that of the others)."""
    specs = _specs()
    unknown = [n for n in names if n not in specs]
    if unknown:
        raise SystemExit(f"no golden spec named {unknown}: choose among {sorted(specs)}")
    have = [n for n in names if n in stored["runs"]]
    if have:
        raise SystemExit(f"{have} already have records: regenerate them all with --write instead")
    out = json.loads(json.dumps(stored))
    with _isolated():
        for name in names:
            out["runs"][name] = dict(record(specs[name]), environment=environment())
    return out


def environment_of(stored: Dict[str, Any], name: str) -> Dict[str, Any]:
    """The environment record ``name`` was made in: its own, where it was added on another machine
    (:func:`add`), else the file's."""
    return stored["runs"][name].get("environment") or stored["environment"]


def bitwise_here(stored: Dict[str, Any], name: str) -> bool:
    """Whether record ``name`` is compared bitwise on this machine (its environment's
    :data:`BITWISE_FIELDS` equal this one's)."""
    here, there = environment(), environment_of(stored, name)
    return all(here[k] == there.get(k) for k in BITWISE_FIELDS)


def retrain(stored: Dict[str, Any]) -> Dict[str, Any]:
    """The records of the stored goldens' specs, trained now (same thread count)."""
    from mlpl_lab.runs.spec import RunSpec

    with _isolated():
        return {name: record(RunSpec.from_dict(r["spec"])) for name, r in stored["runs"].items()}


def suspects(stored: Dict[str, Any], failing) -> List[str]:
    """The components whose version a change that alters the records ``failing`` (names) must
    bump: those the failing records guard and no agreeing record does (empty where every
    component of a failing record is also guarded by an agreeing one)."""
    failing = set(failing)
    bad = set().union(*(stored["runs"][n]["components"] for n in failing)) if failing else set()
    good = set().union(*(r["components"] for n, r in stored["runs"].items() if n not in failing))
    return sorted(bad - good)


def failing(stored: Dict[str, Any], now: Dict[str, Any], bitwise) -> List[str]:
    """The names of the records ``now`` differs from (``bitwise`` as in :func:`differences`)."""
    return [name for name in stored["runs"] if differences({"runs": {name: stored["runs"][name]}}, now, bitwise)]


def differences(stored: Dict[str, Any], now: Dict[str, Any], bitwise) -> List[str]:
    """Every way ``now`` differs from ``stored`` (empty when they agree); ``bitwise``: one bool for
    every record, or ``{name: bool}`` (:func:`bitwise_here` of each)."""
    out = []
    every = bitwise
    for name, want in stored["runs"].items():
        bitwise = every.get(name, False) if isinstance(every, dict) else every
        got = now[name]
        if got["best_epoch"] != want["best_epoch"]:
            out.append(f"{name}: best epoch {got['best_epoch']} != {want['best_epoch']}")
        if len(got["history"]) != len(want["history"]):
            out.append(f"{name}: {len(got['history'])} epochs != {len(want['history'])}")
            continue
        for e, (g, w) in enumerate(zip(got["history"], want["history"]), start=1):
            if set(g) != set(w):
                out.append(f"{name}, epoch {e}: fields {sorted(set(g) ^ set(w))} differ")
                continue
            for k in w:
                a, b = g[k], w[k]
                if math.isnan(a) and math.isnan(b):
                    continue
                ok = a == b if bitwise else abs(a - b) <= TOLERANCE["abs"] + TOLERANCE["rel"] * abs(b)
                if not ok:
                    out.append(f"{name}, epoch {e}: {k} = {a!r}, golden {b!r}")
        if bitwise and got["weights_sha256"] != want["weights_sha256"]:
            out.append(f"{name}: the best weights differ (sha256)")
    return out


def load() -> Dict[str, Any]:
    return json.loads(GOLDEN_FILE.read_text())


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--write", action="store_true", help="regenerate tests/goldens/records.json")
    parser.add_argument("--add", nargs="+", metavar="NAME", help="add the records of these golden specs, "
                        "made on this machine (each keeps its own environment)")
    args = parser.parse_args(argv)
    if not args.write and not args.add:
        parser.error("nothing to do: pass --write to regenerate the golden records, or --add NAME ...")
    if args.write and args.add:
        parser.error("--write regenerates every record; --add adds some: pass one of them")
    goldens = make() if args.write else add(load(), args.add)
    GOLDEN_FILE.parent.mkdir(parents=True, exist_ok=True)
    GOLDEN_FILE.write_text(json.dumps(goldens, indent=1, sort_keys=True) + "\n")
    made = (f"environment {goldens['environment']}" if args.write else
            f"added {', '.join(args.add)}, made in {environment()}")
    print(f"wrote {GOLDEN_FILE} ({len(goldens['runs'])} runs, key scheme {goldens['key_scheme']}, {made})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
