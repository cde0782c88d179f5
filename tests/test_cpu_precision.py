"""The CPU training precision switch (issue 51, ``MLPL_LAB_CPU_PRECISION``): bfloat16 autocast in
the training step of a run whose spec asks for no AMP, recorded in the run's environment, never
in its key, so a pack trained in either precision is served on any machine."""
from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
import torch

from mlpl_lab.engine import device as device_mod
from mlpl_lab.engine.device import CPU_PRECISION_ENV, autocast_dtype, cpu_has_native_bf16, cpu_precision
from mlpl_lab.runs import ensure as run_ensure
from mlpl_lab.runs import ensure as run_ensure, store
from mlpl_lab.runs.environment import numeric_environment

from test_store import P, data_root  # noqa: F401  (fixtures: a temporary store, a tiny profile)


@pytest.fixture
def cpu_only(monkeypatch):
    """Runs train on the CPU (the switch is for CPUs) and the switch starts unset."""
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.delenv(CPU_PRECISION_ENV, raising=False)


def test_the_switch_resolves_fp32_bf16_and_auto(monkeypatch):
    """Bugs caught: an unset switch that is not the documented default; ``auto`` that ignores the
    CPU; a typo silently read as fp32."""
    monkeypatch.delenv(CPU_PRECISION_ENV, raising=False)
    assert cpu_precision() == device_mod.DEFAULT_CPU_PRECISION == "fp32"
    for value, want in (("bf16", "bf16"), ("FP32", "fp32"), (" bf16 ", "bf16")):
        monkeypatch.setenv(CPU_PRECISION_ENV, value)
        assert cpu_precision() == want
    monkeypatch.setenv(CPU_PRECISION_ENV, "auto")
    for native, want in ((True, "bf16"), (False, "fp32")):
        monkeypatch.setattr(device_mod, "cpu_has_native_bf16", lambda native=native: native)
        assert cpu_precision() == want
        assert autocast_dtype("cpu", False) == (torch.bfloat16 if native else None)
    monkeypatch.setenv(CPU_PRECISION_ENV, "half")
    with pytest.raises(ValueError, match="MLPL_LAB_CPU_PRECISION='half' is not one of"):
        cpu_precision()


def test_the_switch_acts_on_the_cpu_only(monkeypatch):
    """Bugs caught: the CPU switch turning on autocast on CUDA; an explicit precision losing to
    the environment."""
    monkeypatch.setenv(CPU_PRECISION_ENV, "bf16")
    assert autocast_dtype("cpu", False) == torch.bfloat16
    assert autocast_dtype("cuda", False) is None
    assert autocast_dtype("cpu", True) == torch.bfloat16
    assert autocast_dtype("cpu", False, precision="fp32") is None  # an explicit precision wins
    monkeypatch.setenv(CPU_PRECISION_ENV, "fp32")
    assert autocast_dtype("cpu", False) is None and autocast_dtype("cpu", True) is None


@pytest.mark.parametrize("native", [True, False])
def test_an_amp_spec_on_the_cpu_autocasts_only_where_bfloat16_is_native(monkeypatch, native):
    """An AMP spec (the gpu profiles) on a CPU: bfloat16 autocast where the CPU computes it
    natively, float32 where it would be emulated (benchmarks/records/amp_cpu.json: the gpu_shape
    notebooks ran past an hour a cell on an AVX2-only CPU), bfloat16 anyway when the switch says bf16 — while
    the recorded ``amp_dtype`` stays what the spec asks. Bugs caught: an AVX2 CPU emulating
    bfloat16 for every gpu_shape run; the switch ignored for AMP specs; the checked ``amp_dtype``
    following the CPU (a gpu pack refused on every other machine)."""
    from mlpl_lab.runs.environment import _amp_dtype_name

    monkeypatch.delenv(CPU_PRECISION_ENV, raising=False)
    monkeypatch.setattr(device_mod, "cpu_has_native_bf16", lambda: native)
    assert autocast_dtype("cpu", True) == (torch.bfloat16 if native else None)
    assert autocast_dtype("cpu", False) is None  # a spec without AMP: the fp32 default
    assert _amp_dtype_name("cpu", True) == "bfloat16" and _amp_dtype_name("cpu", False) == "off"
    monkeypatch.setenv(CPU_PRECISION_ENV, "bf16")
    assert autocast_dtype("cpu", True) == torch.bfloat16
    monkeypatch.setenv(CPU_PRECISION_ENV, "auto")
    assert autocast_dtype("cpu", True) == (torch.bfloat16 if native else None)


def test_native_bf16_is_read_from_the_cpu_flags(monkeypatch):
    """The detection against an independent reading of /proc/cpuinfo (Linux), and without it."""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.exists():
        flags = {f for line in cpuinfo.read_text().splitlines() if line.startswith("flags")
                 for f in line.split(":", 1)[1].split()}
        assert cpu_has_native_bf16() == bool({"avx512_bf16", "amx_bf16"} & flags)
    real = Path.read_text

    def no_cpuinfo(self, *a, **k):
        if str(self) == "/proc/cpuinfo":
            raise OSError("no such file")
        return real(self, *a, **k)

    monkeypatch.setattr(Path, "read_text", no_cpuinfo)
    cpu = getattr(torch._C, "_cpu", None)
    if not callable(getattr(cpu, "_is_avx512_bf16_supported", None)):
        assert cpu_has_native_bf16() is False  # no flags to read: fp32, never a guess


def _activation_dtypes(monkeypatch):
    """The dtype of every Conv2d output computed in training mode (the oracle that autocast is on
    in the step: under bfloat16 autocast a convolution's output is bfloat16)."""
    seen = []

    def hook(module, args, output):
        if isinstance(module, torch.nn.Conv2d) and module.training and torch.is_grad_enabled():
            seen.append(output.dtype)

    handle = torch.nn.modules.module.register_module_forward_hook(hook)
    return seen, handle


@pytest.mark.parametrize("precision,dtype", [("bf16", torch.bfloat16), ("fp32", torch.float32)])
def test_the_training_step_runs_in_the_switched_precision_and_the_environment_says_so(
        data_root, P, cpu_only, monkeypatch, precision, dtype):
    """Bugs caught: the switch read but autocast never entered in the step; the precision not
    recorded; evaluation (no grad) run in bfloat16 too."""
    monkeypatch.setenv(CPU_PRECISION_ENV, precision)
    spec = P.spec("an", epochs=1)
    seen, handle = _activation_dtypes(monkeypatch)
    try:
        run = run_ensure.ensure([spec], quiet=True)[0]
    finally:
        handle.remove()
    assert seen and set(seen) == {dtype}
    want = "bfloat16" if precision == "bf16" else "float32"
    assert run.environment["precision"] == want
    assert json.loads((store.RunStore().path(spec) / "summary.json").read_text())["environment"]["precision"] == want
    assert run.environment["amp_dtype"] == "off"  # the spec asked for no AMP: what is checked is unchanged


def test_the_key_does_not_change_and_a_run_of_either_precision_is_served(data_root, P, cpu_only, monkeypatch):
    """Bugs caught: the precision in the key (a bf16 pack never served on a laptop without
    bfloat16, the shipped fp32 pack retrained under ``auto``); a run of the other precision
    refused as foreign."""
    spec = P.spec("an", epochs=1)
    keys = {}
    for value in ("fp32", "bf16", "auto", None):
        if value is None:
            monkeypatch.delenv(CPU_PRECISION_ENV, raising=False)
        else:
            monkeypatch.setenv(CPU_PRECISION_ENV, value)
        keys[value] = (spec.key, P.spec("an", epochs=1).key, spec.backbone_from)
    assert len(set(keys.values())) == 1
    monkeypatch.setenv(CPU_PRECISION_ENV, "bf16")
    made = run_ensure.ensure([spec], quiet=True)[0]
    assert made.environment["precision"] == "bfloat16"
    calls = []
    monkeypatch.setattr(run_ensure, "fit", lambda *a, **k: calls.append(a))
    monkeypatch.setenv(CPU_PRECISION_ENV, "fp32")  # a laptop without bfloat16
    served = run_ensure.ensure([spec], quiet=True)[0]
    assert calls == [] and served.spec.key == made.spec.key
    assert served.environment["precision"] == "bfloat16"
    assert numeric_environment(spec)["precision"] == "float32"  # this process would train in fp32


def test_a_run_stored_before_the_precision_was_recorded_is_served(data_root, P, cpu_only, monkeypatch):
    """The shipped pack's runs have no ``precision`` in their environment: served under every
    setting of the switch."""
    spec = P.spec("an")
    st = store.RunStore()
    st.put(spec, [{"epoch": 1, "val_mAP": 1.0, "test_mAP": 1.0}], 0, {},
           {"networks": {"net": {"w": torch.zeros(3)}}})
    path = st.path(spec) / "summary.json"
    summary = json.loads(path.read_text())
    summary["environment"].pop("precision")
    path.write_text(json.dumps(summary))
    for value in ("fp32", "bf16", "auto"):
        monkeypatch.setenv(CPU_PRECISION_ENV, value)
        assert st.get(spec) is not None


def test_reproduce_retrains_in_the_recorded_precision(data_root, P, cpu_only, monkeypatch, tmp_path):
    """Bug caught: a reproduction of a bf16 run trained in this process's precision (fp32 here),
    which gives other numbers. The switch is restored afterwards."""
    from mlpl_lab.runs import workers

    spec = P.spec("an", epochs=1)
    monkeypatch.setenv(CPU_PRECISION_ENV, "bf16")
    run = run_ensure.ensure([spec], quiet=True)[0]
    monkeypatch.setenv(CPU_PRECISION_ENV, "fp32")

    def numbers(r):
        return [(row["loss"], row["val_mAP"], row["val_AP"]) for row in r.history]

    again = workers.reproduce(run, store.RunStore(tmp_path / "again"))
    assert again.environment["precision"] == "bfloat16" and numbers(again) == numbers(run)
    assert cpu_precision() == "fp32"  # restored
    fp32 = run_ensure.execute(spec, store.RunStore(tmp_path / "fp32"))  # the oracle: the pin matters
    assert fp32.environment["precision"] == "float32" and numbers(fp32) != numbers(run)


# ----------------------------------------------------------- the decision's record
RECORD = Path(__file__).resolve().parents[1] / "benchmarks" / "records" / "bf16_decision_cpu.json"
HANDBOOK = Path(__file__).resolve().parents[1] / "notebooks" / "handbook.md"


def _script():
    import importlib.util

    path = RECORD.parents[1] / "bf16_decision.py"
    spec = importlib.util.spec_from_file_location("bf16_decision", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_record_applies_its_own_rule_to_its_own_numbers():
    """The decision re-derived from the record's per-seed values (an independent t quantile), the
    rule the one the script states, the seeds the cpu profile's fresh seeds, and the default
    precision fp32 unless the record allows bf16 (issue 51: a no leaves fp32)."""
    from scipy import stats

    from mlpl_lab.protocol import tuning
    from mlpl_lab.profiles import get_profile

    rec = json.loads(RECORD.read_text())
    assert rec["rule"] == _script().RULE
    assert {"torch", "cpu", "cpu_flags", "native_bf16", "cpu_capability"} <= set(rec["machine"])
    verdicts = {}
    for label in ("AN", "GR"):
        m = rec["methods"][label]
        seeds = m["seeds"]
        assert [s["seed"] for s in seeds] == list(tuning.fresh_seeds(get_profile("cpu")))
        assert all(s["fp32"]["key"] == s["bf16"]["key"] == s["key"] for s in seeds)  # the same runs' keys
        assert all(s["bf16"]["environment"]["precision"] == "bfloat16" for s in seeds)
        assert all("precision" not in s["fp32"]["environment"] or s["fp32"]["environment"]["precision"] == "float32"
                   for s in seeds)
        d = np.array([s["bf16"]["test_mAP"] - s["fp32"]["test_mAP"] for s in seeds])
        half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
        sigma = np.array([s["fp32"]["test_mAP"] for s in seeds]).std(ddof=1)
        assert m["mean_difference"] == pytest.approx(d.mean(), abs=1e-3)
        assert m["ci95"] == pytest.approx([d.mean() - half, d.mean() + half], abs=2e-3)
        assert m["seed_noise_sd_fp32"] == pytest.approx(sigma, abs=1e-3)
        inside = bool(d.mean() - half <= 0 <= d.mean() + half and half <= 2 * sigma and abs(d.mean()) <= sigma)
        assert m["inside_seed_noise"] is inside
        verdicts[label] = inside
    assert rec["decision"]["inside_seed_noise"] == verdicts
    assert rec["decision"]["bf16_allowed"] is all(verdicts.values())
    if not rec["decision"]["bf16_allowed"]:
        assert device_mod.DEFAULT_CPU_PRECISION == "fp32"


def test_the_handbook_states_the_records_numbers():
    """The handbook's paragraph on the switch quotes the record (mean difference and interval of
    each method, the seed-noise sd, the decision), so the prose cannot drift from the measurement."""
    import re

    rec = json.loads(RECORD.read_text())
    text = HANDBOOK.read_text()
    para = next(p for p in re.split(r"\n(?=\* \*\*)", text) if p.startswith("* **Precision**"))
    para = " ".join(para.split())
    for label in ("AN", "GR"):
        m = rec["methods"][label]
        lo, hi = m["ci95"]
        assert f"{label} {m['mean_difference']:+.2f} mAP ({lo:+.2f} to {hi:+.2f}" in para, label
        assert f"sd {m['seed_noise_sd_fp32']:.2f}" in para, label
    assert ("bf16 stays off" in para) is (not rec["decision"]["bf16_allowed"])
    assert "benchmarks/records/bf16_decision_cpu.json" in para


def test_the_supplementary_check_is_stated_as_recorded():
    """The supplementary rows (bf16 fine-tuning from the fp32 backbone), where the record has them,
    are quoted by the handbook with the record's numbers and re-derive from their seeds."""
    import re

    from scipy import stats

    rec = json.loads(RECORD.read_text())
    sup = rec.get("supplement_fp32_backbone")
    if sup is None:
        pytest.skip("the record has no supplementary check")
    para = " ".join(next(p for p in re.split(r"\n(?=\* \*\*)", HANDBOOK.read_text())
                         if p.startswith("* **Precision**")).split())
    for label in [k for k in ("AN", "GR") if k in sup]:
        d = np.array([s["bf16"] - s["fp32"] for s in sup[label]["seeds"]])
        half = stats.t.ppf(0.975, len(d) - 1) * d.std(ddof=1) / np.sqrt(len(d))
        assert sup[label]["ci95"] == pytest.approx([d.mean() - half, d.mean() + half], abs=2e-3)
        lo, hi = sup[label]["ci95"]
        assert f"{label} {sup[label]['mean_difference']:+.2f} mAP ({lo:+.2f} to {hi:+.2f})" in para
        fp32 = {s["seed"]: s["fp32"]["test_mAP"] for s in rec["methods"][label]["seeds"]}
        assert {s["seed"]: s["fp32"] for s in sup[label]["seeds"]} == fp32  # the same fp32 runs
