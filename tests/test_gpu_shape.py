"""The ``gpu_shape`` profile (issue 34): the gpu profile's code paths — ResNet-18 at 64 px, AMP
(bfloat16 autocast where the CPU computes it natively, float32 elsewhere), channels-last, every chapter's gpu design (method lists, rows, seeds, LAC at 128 px) — at
a CPU's sizes. The whole suite trains GR's gpu design (the zoo's AN and GR, one of Table 3's rows)
and LAC's (ResNet-18 cut after layer3 at 128 px, its two stages, its maps) directly at smaller
sizes; ``make test-gpu-shape`` sets ``MLPL_LAB_GPU_SHAPE=all`` and executes every notebook under
it, 02 and 05 included (02 alone took 29 min of the whole suite's 31 on one worker, its longest
unit, when the suite executed it: ``benchmarks/records/test_durations.json``).
The asserts are on what ran and was recorded (observations): on two seeds no claim is decided.
"""
from __future__ import annotations

import math
import os
from pathlib import Path

import pytest

from claims_oracle import check_claims_record
from mlpl_lab.profiles import PROFILE_NAMES, get_profile
from mlpl_lab.reporting.report import all_finite
from mlpl_lab.protocol import recipes

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = sorted(p.name for p in (ROOT / "notebooks").glob("[0-9][0-9]_*.ipynb"))
#: the notebooks with a test of their own below (the rest share one check under MLPL_LAB_GPU_SHAPE=all)
OWN_TEST = ("02_gr_loss.ipynb", "05_lac.ipynb")
ALL = os.environ.get("MLPL_LAB_GPU_SHAPE", "") == "all"


# --------------------------------------------------------------------- the profile itself
def test_gpu_shape_has_the_gpu_profiles_shapes_at_small_sizes():
    """Bug caught: a gpu_shape that drifts from the gpu profile's backbone, input size, AMP or
    schedule (then it would not execute the gpu code paths), or grows past a CPU's budget."""
    g, s = get_profile("gpu"), get_profile("gpu_shape")
    assert "gpu_shape" in PROFILE_NAMES  # the CLI's and papermill's choices
    assert (s.model, s.model_kwargs, s.image_size, s.amp, s.lr_schedule, s.glyphs, s.init) == \
           (g.model, g.model_kwargs, g.image_size, g.amp, g.lr_schedule, g.glyphs, g.init)
    assert (s.model, s.image_size, s.amp) == ("resnet18", 64, True) and s.channels_last
    assert s.n_train <= 2000 and s.epochs in (1, 2) and list(s.seeds) == [0, 1]
    assert s.pretrain["n_train"] <= 2000 and s.n_val < g.n_val and s.n_test < g.n_test
    spec = s.spec("an")
    assert spec.train["amp"] is True and spec.train["channels_last"] is True
    assert spec.train["model"] == "resnet18" and spec.data["image_size"] == 64


def test_the_cli_accepts_gpu_shape():
    from mlpl_lab.cli import build_parser

    args = build_parser().parse_args(["report", "--profile", "gpu_shape", "--out", "x"])
    assert args.profile == "gpu_shape"


def test_every_chapter_takes_the_gpu_design_under_gpu_shape():
    """Bug caught: a chapter branching on ``name == "gpu"`` (or a per-profile table with no
    gpu_shape entry) silently giving gpu_shape the cpu design — the cpu method lists, one key seed —
    so the gpu lists would stay unexecuted. Expected values are written out from the gpu design
    the chapters document, capped at the profile's two seeds."""
    from mlpl_lab.chapters import assume_negative, benchmark, cls, gr, lac, opml, pu_mlc

    P = get_profile("gpu_shape")
    # 02: the whole Table 2 zoo and the full Table 3 ablation (six rows)
    assert gr.left_out(P) == []
    from mlpl_lab.protocol.common import design_name

    assert design_name(P) == "gpu" and design_name("cpu") == "cpu" and design_name("smoke") == "smoke"
    assert gr.design(P).ablation_rows == ("k̂", "v", "L", "k̂+v", "k̂+L", "v+L")
    # key comparisons on both of the profile's seeds (the cpu fallback would give one)
    assert assume_negative.key_seeds(P) == [0, 1]
    # 03: the full single-positive list (smoke keeps four rows)
    assert set(opml.design(P).rows) == {
        "AN", "OPML", "OPML+HR", "OPML+HR+LS", "OPML+HR+LC", "OPML-SP"}
    # 04: all four regimes for AN, CLS and the family, CLC, the wide sweeps, both seeds
    d = cls.design(P)
    assert set(d.table_regimes) == set(d.family_regimes) == {"drop 25 %", "drop 50 %", "drop 75 %",
                                                            "single positive"}
    assert d.with_clc and d.tau_h_grid == (0.0, 0.006, 0.012, 0.021, 0.06) and d.table_seeds == (0, 1)
    # 05: ResNet-18 cut after layer3 at 128 px, the code's head sizes, the profile's batch size
    d = lac.design(P)
    assert (d.model, d.model_kwargs, d.scene, d.batch_size) == (
        "resnet18", {"last_layer": "layer3", "head": "label_query"}, {"image_size": 128}, 128)
    assert d.seeds == (0, 1) and d.stage1_epochs + d.stage2_epochs <= 2 * P.epochs
    # 06: two proportions, four noise levels, three γ
    d = pu_mlc.design(P)
    assert d.proportions == (0.1, 0.5) and d.fn_rates == (0.0, 0.05, 0.1, 0.15) and d.seeds == (0, 1)
    # 07: every row under every regime it applies to; tuned (as under gpu), so its rows are
    # reported on the two fresh seeds after the selection seed 0
    d = benchmark.design(P)
    assert benchmark.left_out(d)[-1] == ("fewer than 3 seeds: " + ", ".join(sorted({r for _, r in d.cells()}))
                                         + " (cells with one seed show no interval; their claims are observations)")
    assert d.grid == benchmark.design("gpu").grid
    assert {row for _, row in d.cells()} == {r.label for r in recipes.rows()}
    assert set(d.seeds.values()) == {(1, 2)}


# --------------------------------------------------------------------- executed notebooks
@pytest.fixture(scope="session")
def gpu_shape_notebooks(tmp_path_factory):
    """``run(name)`` executes ``notebooks/<name>`` under gpu_shape (once per session) and returns
    its records. ``MLPL_LAB_GPU_SHAPE_OUT`` keeps the executed notebooks (their papermill
    durations are the timings ``mlpl-lab course timings`` reads)."""
    from mlpl_lab.reporting.execute import execute_notebook
    from mlpl_lab.reporting.report import read_records

    out = Path(os.environ.get("MLPL_LAB_GPU_SHAPE_OUT") or tmp_path_factory.mktemp("gpu-shape"))
    cache = {}

    def run(name: str):
        if name not in cache:
            executed = execute_notebook(ROOT / "notebooks" / name, out, profile="gpu_shape", html=True,
                                        timeout=3600)
            cache[name] = read_records(executed)
        return cache[name]

    return run


def _stored(specs):
    """The stored runs of ``specs`` (the notebook's kernel trained them into this session's store)."""
    from mlpl_lab.runs.store import RunStore

    st = RunStore()
    return [st.get(s) for s in specs]


def _check_generic(name, rec):
    """What every notebook must record under gpu_shape: finite scores and times, mAP in [0, 100],
    and a claims table whose every verdict is 'inconclusive' on at most two paired seeds. (A
    diagnostic may be NaN where it is undefined after two epochs, e.g. the precision of PLC's
    pseudo-positives when it made none.)"""
    assert rec, f"{name} recorded nothing"
    scores = {k: v for k, v in rec.items() if "mAP" in k or "seconds" in k}
    assert all_finite(scores), f"{name}: a score or time is not finite"
    if "mAP" in rec:
        vals = [v for v in _numbers(rec["mAP"])]
        assert vals and all(0.0 <= v <= 100.0 for v in vals), (name, vals)
    if name.startswith("00_"):
        return
    claims = {k: v for key, value in rec.items() if "claims" in key and isinstance(value, dict)
              for k, v in value.items() if isinstance(v, dict) and "verdict" in v}
    assert claims, f"{name} records no claim"
    for label, c in claims.items():
        assert c["verdict"].startswith("inconclusive") and c["n"] <= 2, (name, label, c["verdict"], c["n"])
    check_claims_record(rec["claims"])


def _numbers(value):
    if isinstance(value, dict):
        for v in value.values():
            yield from _numbers(v)
    elif isinstance(value, (list, tuple)):
        for v in value:
            yield from _numbers(v)
    elif isinstance(value, (int, float)) and not isinstance(value, bool):
        yield float(value)


@pytest.mark.slow
def test_gr_gpu_design_trains_its_rows_at_small_sizes():
    """GR's gpu code path without executing notebook 02 (``make test-gpu-shape`` executes it): one
    fresh seed of the gpu design's AN, GR (paper default) and Table 3's first ablation row at
    gpu_shape's shapes on fewer images. Bugs caught: a row that drops to the small CNN, 32 px or
    float32 under the gpu design; GR's probes (the separation of hidden positives, read by the
    chapter's figure) missing from the history; a score outside [0, 100]."""
    from mlpl_lab.catalogue import LABEL
    from mlpl_lab.chapters import gr
    from mlpl_lab.runs.ensure import ensure

    base = get_profile("gpu_shape")
    P = get_profile("gpu_shape", n_train=96, n_val=48, n_test=48,
                    pretrain=base.pretrain | {"n_train": 256, "n_val": 48, "n_test": 48})
    d = gr.design(P)
    assert set(d.zoo) == set(gr.design("gpu").zoo) and d.ablation_rows == gr.design("gpu").ablation_rows
    rows = gr.ablation_specs(d, {})
    seed = d.fresh_seeds[0]
    specs = {"AN": P.spec("an", seed=seed), LABEL.gr: P.spec("gr", {}, d.regime, {}, seed=seed),
             d.ablation_rows[0]: rows[d.ablation_rows[0]][0]}
    runs = dict(zip(specs, ensure(list(specs.values()), quiet=True)))
    for row, run in runs.items():
        assert run.environment["amp_dtype"] == "bfloat16" and run.environment["device"] == "cpu", row
        assert run.spec.train["model"] == "resnet18" and run.spec.train["channels_last"] is True, row
        assert run.spec.data["image_size"] == 64, row
        assert 0.0 <= run.best["test_mAP"] <= 100.0, (row, run.best)
        assert all(math.isfinite(r["loss"]) for r in run.history), row
    separation = [r.get("train_separation") for r in runs[LABEL.gr].history]
    assert len(separation) == P.epochs and all(v is not None and math.isfinite(v) for v in separation)


@pytest.mark.notebook
@pytest.mark.skipif(not ALL, reason="make test-gpu-shape (MLPL_LAB_GPU_SHAPE=all) executes notebook 02; "
                                    "the whole suite trains GR's gpu design directly")
def test_notebook_02_under_gpu_shape(gpu_shape_notebooks):
    from mlpl_lab.chapters import gr

    rec = gpu_shape_notebooks("02_gr_loss.ipynb")
    _check_generic("02", rec)
    # the gpu method list, every row of it trained and recorded
    assert set(rec["mAP"]) == set(gr.design("gpu").zoo) == set(rec["train_seconds"])
    assert all(v > 0 for v in rec["train_seconds"].values())
    assert set(rec["ablation_mAP"]) == {"AN (all off)", "GR (all on)", "k̂", "v", "L", "k̂+v", "k̂+L", "v+L"}
    key = rec["claims"]["gr_beats_an"]
    assert key["seeds"] == [1, 2] and key["verdict"] == "inconclusive (2 seeds)"  # the fresh seeds
    assert {len(r["trials"]) for r in rec["tuning"].values()} == {2}  # gpu_shape's equal budget
    for curve in rec["separation"].values():
        assert len(curve) == get_profile("gpu_shape").epochs + 1 and all(0.0 <= v <= 1.0 for v in curve)
    # the runs the notebook stored: ResNet-18 at 64 px, NHWC, trained under bfloat16 autocast
    P = get_profile("gpu_shape")
    gr_kept = rec["tuning"]["GR"]["chosen_params"]
    specs = [P.spec("gr", gr_kept, seed=s) for s in (1, 2)] + [P.spec("an", seed=s) for s in (1, 2)]
    for spec, run in zip(specs, _stored(specs)):
        assert run is not None, f"not in the store: {spec.describe()}"
        assert run.environment["amp_dtype"] == "bfloat16" and run.environment["device"] == "cpu"
        assert run.spec.train["model"] == "resnet18" and run.spec.train["channels_last"] is True
        assert run.spec.data["image_size"] == 64


@pytest.mark.slow
def test_lac_gpu_design_trains_both_stages_and_maps_at_small_sizes():
    """LAC's gpu code path without executing notebook 05 (the whole suite's longest unit but one in
    ``benchmarks/records/test_durations.json`` while it ran there; ``make test-gpu-shape`` executes
    it): one seed of the gpu design's AN, +PLC and LAC rows at
    gpu_shape's shapes on fewer images, then attention and Grad-CAM maps of AN and LAC. Bugs
    caught: a stage-2 run that does not start from its stage-1 spec, a ResNet-18 cut or head that
    breaks at 128 px, bfloat16 autocast lost on the way, a map whose layer does not exist in the
    cut backbone (the maps' scores would be missing or outside (0, 1))."""
    from mlpl_lab.catalogue import LABEL
    from mlpl_lab.chapters import lac
    from mlpl_lab.runs.ensure import ensure
    from mlpl_lab.viz.attention import map_localisation_table

    base = get_profile("gpu_shape")
    P = get_profile("gpu_shape", n_train=96, n_val=48, n_test=48,
                    pretrain=base.pretrain | {"n_train": 256, "n_val": 48, "n_test": 48})
    d = lac.design(P)
    assert (d.model, d.model_kwargs["last_layer"], d.scene) == ("resnet18", "layer3", {"image_size": 128})
    rows = (LABEL.an, LABEL.lac_plc, LABEL.lac_row)
    specs = [lac.row_spec(P, row, d.seeds[0], design=d) for row in rows]
    assert specs[2].init_from == specs[1]  # LAC's stage 2 starts from the +PLC run of its seed
    runs = dict(zip(rows, ensure(specs, quiet=True)))
    for row, run in runs.items():
        assert run.spec.data["image_size"] == 128 and run.spec.train["model_kwargs"]["last_layer"] == "layer3"
        assert run.environment["amp_dtype"] == "bfloat16" and run.spec.train["channels_last"] is True
        assert 0.0 <= run.best["test_mAP"] <= 100.0, (row, run.best)
        assert run.history[-1]["peak_memory_mib"] < 8192, (row, run.history[-1]["peak_memory_mib"])
    splits = lac.chapter_splits(d, d.seeds[0])
    models = {"AN": runs[LABEL.an].method, "LAC": runs[LABEL.lac_row].method}
    loc = map_localisation_table(models, splits.train, which=("observed", "hidden"), max_images=24)
    assert len(loc) == 2 * 2 * 2  # AN/LAC x attention/Grad-CAM x observed/hidden
    for key, s in loc.to_dict(orient="index").items():
        assert 0 < s["area"] < 1 and s["pairs"] > 0, key


@pytest.mark.notebook
@pytest.mark.skipif(not ALL, reason="make test-gpu-shape (MLPL_LAB_GPU_SHAPE=all) executes notebook 05; "
                    "the whole suite trains LAC's gpu design directly")
def test_notebook_05_under_gpu_shape(gpu_shape_notebooks):
    from mlpl_lab.chapters import lac

    rec = gpu_shape_notebooks("05_lac.ipynb")
    _check_generic("05", rec)
    assert set(rec["mAP"]) == set(lac.ROWS)
    P = get_profile("gpu_shape")
    for row, c in rec["pseudo_positives"].items():
        assert len(c["per seed"]) == 2, row
    assert [r["seed"] for r in rec["stage2_start"]] == [0, 1]
    assert len(rec["localisation"]) == 2 * 2 * 2  # AN/LAC x attention/Grad-CAM x observed/hidden
    for key, s in rec["localisation"].items():
        assert 0 < s["area"] < 1 and s["pairs"] > 0, key
    assert rec["claims"]["plc_beats_an"]["seeds"] == [0, 1]
    # every row stored at the gpu design: ResNet-18 cut after layer3, 128 px, bfloat16 autocast
    specs = [s for ss in lac.specs(lac.design(P)).now[lac.TABLE].values() for s in ss]
    for spec, run in zip(specs, _stored(specs)):
        assert run is not None, f"not in the store: {spec.describe()}"
        assert run.spec.data["image_size"] == 128 and run.spec.train["model_kwargs"]["last_layer"] == "layer3"
        assert run.environment["amp_dtype"] == "bfloat16"
        # memory: a laptop holds the gpu design at these sizes (peak resident set of the process)
        assert run.history[-1]["peak_memory_mib"] < 8192, (spec.describe(), run.history[-1]["peak_memory_mib"])


@pytest.mark.notebook
@pytest.mark.skipif(not ALL, reason="make test-gpu-shape (MLPL_LAB_GPU_SHAPE=all) executes every notebook")
@pytest.mark.parametrize("name", [n for n in NOTEBOOKS if n not in OWN_TEST])
def test_every_other_notebook_under_gpu_shape(gpu_shape_notebooks, name):
    _check_generic(name, gpu_shape_notebooks(name))
