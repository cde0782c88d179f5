"""Chapter 00 describes the scenes the chapters train on: its label statistics equal those of the
splits a chapter's run of the same seed trains on, computed here from the run specs the chapters
build (``Profile.spec`` -> ``build_splits``), with plain tensor arithmetic."""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from mlpl_lab.chapters import assume_negative, benchmark, partial_labels
from mlpl_lab.profiles import get_profile
from mlpl_lab.runs.splits_cache import build_splits
from mlpl_lab.protocol import regimes as protocol_regimes

ROOT = Path(__file__).resolve().parents[1]


def _oracle(P, regime, params, seed):
    """Positives per image, hidden share, AN's false-negative rate and observed positives per image
    of the training split a chapter's AN run of ``seed`` under ``regime`` trains on."""
    split = build_splits(P.spec("an", {}, regime, params, seed=seed)).train
    y, obs = split.labels.long(), split.observed.long()
    hidden = ((y == 1) & (obs != 1)).sum().item()
    return {"true": y.sum().item() / y.shape[0], "hidden": hidden / y.sum().item(),
            "fnr": hidden / (obs != 1).sum().item(), "observed": (obs == 1).sum().item() / y.shape[0]}


@pytest.mark.parametrize("profile", ["smoke", "cpu"])
def test_chapter_00_statistics_are_those_of_the_chapters_splits(profile):
    P, seed = get_profile(profile), 0
    stats = partial_labels.label_statistics(P, seed)
    # the regimes 00 shows are the benchmark's, which hold those of chapter 01
    assert {k: v for k, v in partial_labels.REGIMES.items() if k != "full"} == protocol_regimes.REGIMES
    assert set(assume_negative.REGIMES) <= set(partial_labels.REGIMES)
    for label, (regime, params) in protocol_regimes.REGIMES.items():
        want = _oracle(P, regime, params, seed)
        row = stats.loc[label]
        assert row["true positives / image"] == pytest.approx(want["true"], abs=1e-12)
        assert row["hidden positive share"] == pytest.approx(want["hidden"], abs=1e-12)
        assert row["AN false-negative rate"] == pytest.approx(want["fnr"], abs=1e-12)
        assert row["observed positives / image"] == pytest.approx(want["observed"], abs=1e-12)
    # and the scenes are the profile's, not the generator's defaults
    scenes = partial_labels.training_scenes(P, seed)
    assert len(scenes) == P.n_train
    for key, value in P.scene.items():
        assert scenes.params[key] == value, key


def test_chapter_00_drop_text_states_what_the_splits_hold():
    P = get_profile("smoke")
    text = partial_labels.drop_rule_markdown(P, 0)
    y = build_splits(P.spec("an", {}, "full", {}, seed=0)).train.labels
    for alpha in (0.25, 0.5, 0.75):
        obs = build_splits(P.spec("an", {}, "drop_positives", {"alpha": alpha}, seed=0)).train.observed
        kept = int((obs == 1).sum())
        assert f"at α = {alpha:g}, {int(y.sum()) - kept} of the {int(y.sum())} positives are hidden, " \
               f"{kept / len(y):.2f} observed positives per image remain" in text
    assert "per_label" in text


def test_notebook_00_uses_the_chapter_module_not_the_generator():
    nb = json.loads((ROOT / "notebooks" / "00_partial_labels.ipynb").read_text())
    code = "\n".join("".join(c["source"]) for c in nb["cells"] if c["cell_type"] == "code")
    assert "make_scenes" not in code and "regime_overview" not in code
    assert "chapter.training_scenes(P, seed)" in code and "chapter.label_statistics(P, seed)" in code
    assert 'chapter.observed_labels(P, "single positive", seed)' in code
