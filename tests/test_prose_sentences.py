"""The sentences the notebooks state about their records are computed (issue 48): hand-derived
cases for each sentence function the prose helper added."""
from __future__ import annotations

import pandas as pd

from mlpl_lab.chapters import cls


def test_cls_noise_sentences_read_the_table():
    """20 % forget rate against 80 % noisy images reaches at most 25 % of them; 20 classes minus
    (2.8 − 1.0) hidden positives leave 18.2 correct labels; τ_h 0.012 = 1.2 % < 9.5 %."""
    noise = pd.DataFrame({"observed pos / image": [1.0, 1.4], "true pos / image": [2.8, 2.8],
                          "hidden / unknown (%)": [9.5, 0.8], "images with a hidden positive (%)": [80.0, 10.0],
                          "tau_h": [0.012, 0.01], "tau_l": [0.06, 0.06]},
                         index=pd.Index(["single positive", "drop 50 %"], name="regime"))
    design = cls.chapter_design("cpu")
    assert design.forget_rate == 0.2
    single, drop = cls.noise_sentences(noise, design, num_classes=20)
    assert "9.5 % of the unknown labels" in single and "80.0 % of the images" in single
    assert "drops at most 25 % of those images" in single
    assert "18.2 correct labels" in single
    assert "τ_h = 1.2 % is below this label noise" in single
    # 20 % of the images against 10 % noisy ones: every noisy image could go; τ_h 1 % above 0.8 %
    assert "drops at most 100 % of those images" in drop
    assert "18.6 correct labels" in drop
    assert "τ_h = 1 % is above this label noise" in drop


class _Run:
    def __init__(self, val, test=None, converged=True):
        self.best = {"val_mAP": val, "test_mAP": val if test is None else test}
        self.converged = converged


def test_scenes_defaults_sentence_reads_the_record():
    """Oracle 97.7 outside the 80–92 band and a gap of 9.3 < 10: both targets missed; a candidate
    inside the band with a 12-point gap misses none."""
    from mlpl_lab.chapters import scenes_choice as sc

    cands = {"generator defaults": {"full labels": [_Run(97.7)], "AN": [_Run(88.4)]},
             "ok": {"full labels": [_Run(86.0), _Run(88.0)], "AN": [_Run(75.0), _Run(75.0)]}}
    text = sc.defaults_sentence(cands)
    assert "reaches 97.7 validation mAP" in text and "single positive 88.4, 9.3 points below" in text
    assert "outside the target band 80–92" in text and "below the 10 points" in text
    ok = sc.defaults_sentence(cands, name="ok")
    assert "87.0" in ok and "12.0 points below" in ok and "both targets are met" in ok
    assert sc.defaults_sentence({"ok": cands["ok"]}) == ""
