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
    from mlpl_lab.protocol import scenes_choice as sc

    cands = {"generator defaults": {"full labels": [_Run(97.7)], "AN": [_Run(88.4)]},
             "ok": {"full labels": [_Run(86.0), _Run(88.0)], "AN": [_Run(75.0), _Run(75.0)]}}
    text = sc.defaults_sentence(cands)
    assert "reaches 97.7 validation mAP" in text and "single positive 88.4, 9.3 points below" in text
    assert "outside the target band 80–92" in text and "below the 10 points" in text
    ok = sc.defaults_sentence(cands, name="ok")
    assert "87.0" in ok and "12.0 points below" in ok and "both targets are met" in ok
    assert sc.defaults_sentence({"ok": cands["ok"]}) == ""


# ---------------------------------------------------------------- read against an executed report
# The reports $MLPL_LAB_REPORTS names (CI: the smoke series and the pack-served cpu report): each
# sentence a notebook computes is read back from the executed notebook and checked against the
# record it states, with the record read independently (read_records) and the sentence parsed here.
import os  # noqa: E402
import re  # noqa: E402
from pathlib import Path  # noqa: E402

import pytest  # noqa: E402


def _given(stem):
    found = [Path(p) / f"{stem}.ipynb" for p in os.environ.get("MLPL_LAB_REPORTS", "").split(os.pathsep) if p]
    found = [p for p in found if p.exists()]
    if not found:
        pytest.skip(f"no executed {stem} given: set MLPL_LAB_REPORTS to folders `mlpl-lab report` wrote")
    return found


def _outputs(path):
    import nbformat

    nb = nbformat.read(str(path), as_version=4)
    for i, cell in enumerate(nb.cells):
        for o in cell.get("outputs", []):
            data = o.get("data", {})
            yield i, "".join(o.get("text", "")) + "".join(data.get("text/markdown", "")) + "".join(
                data.get("text/plain", "")) if "text/html" not in data else "".join(data.get("text/html", ""))


def _header_seeds(path):
    for _, text in _outputs(path):
        m = re.search(r"^seeds\s+(.+)$", text, re.M)
        if m:
            return m.group(1)
    raise AssertionError(f"{path.name}: no seeds line in the header")


def _seed_set(text):
    """The seeds a header line names before its "(every table and claim)": "1–5" or "1, 2"."""
    head = text.split("(")[0].strip()
    m = re.fullmatch(r"(\d+)–(\d+)", head)
    return set(range(int(m.group(1)), int(m.group(2)) + 1)) if m else {int(x) for x in head.split(",")}


@pytest.mark.reports
@pytest.mark.parametrize("stem", ["01_assume_negative", "02_gr_loss", "03_opml", "04_cls", "05_lac", "06_pu_mlc"])
def test_no_report_shows_a_live_exercise_failure(stem):
    """Bug caught: every report 01–06 printed "✗ Live exercise — … no live run … to compare" after
    saying the exercise was left to class."""
    for path in _given(stem):
        for i, text in _outputs(path):
            assert "✗ Live exercise" not in text and "no live run" not in text, (path, i, text[:200])


@pytest.mark.reports
@pytest.mark.parametrize("stem", ["02_gr_loss", "07_benchmark"])
def test_the_header_states_the_seeds_the_claims_use_and_the_one_that_selects(stem):
    from mlpl_lab.reporting.report import read_records

    for path in _given(stem):
        line = _header_seeds(path)
        claims = read_records(path)["claims"]
        used = {s for c in claims.values() for s in c["seeds"]}
        assert _seed_set(line) >= used and "(every table and claim)" in line, (line, sorted(used))
        m = re.search(r"seed (\d+) only selects", line)
        if m:
            assert int(m.group(1)) not in used, line


@pytest.mark.reports
def test_02s_separation_sentence_states_its_record():
    from mlpl_lab.reporting.report import read_records

    for path in _given("02_gr_loss"):
        sep = read_records(path)["separation"]
        text = next(t for _, t in _outputs(path) if "**Measured here** (W1" in t)
        for label, curve in sep.items():
            assert f"{label} from {curve[0]:.3f} before training to {curve[-1]:.3f} after the last epoch" in text, text
        assert "destroys" not in text


@pytest.mark.reports
def test_00s_two_single_positive_rows_are_equal_and_the_sentence_says_why():
    from mlpl_lab.reporting.report import read_records

    for path in _given("00_partial_labels"):
        rec = read_records(path)
        for key in ("hidden_positive_share", "an_false_negative_rate", "observed_positives_per_image"):
            assert rec[key]["single positive"] == rec[key]["single positive (size-biased)"], key
        text = next(t for _, t in _outputs(path) if "**Size-biased single positive**" in t)
        m = re.search(r"largest object in (\d+) % of them under the size-biased draw and in (\d+) % under the "
                      r"uniform one", text)
        assert m and int(m.group(1)) == 100 and int(m.group(2)) < 100, text


def _count_share(records):
    """The protocol's share recounted by hand from a report's own records: every distinct run of
    its run-keyed convergence record once; a run counts when its flag is True, or when it is
    schedule-bound and a claim that reads it (or the claim that claim controls) notes "the length
    check agrees" (and none that reads it notes "disagrees"), or, where no claim's note decides it,
    when the chapter's length-check record shows its row reading the same against AN at both lengths
    (:func:`_check_rows_agree`) and the chapter listed it as agreeing."""
    flags = records["convergence (by run key)"]
    claims = records.get("claims") or {}
    note = {c.get("id") or n: str(c.get("schedule_bound") or "") for n, c in claims.items()}
    verdict = {}
    for name, c in claims.items():
        said = note.get(c.get("id") or name, "")
        if "length check agrees" not in said and "length check disagrees" not in said:
            said = note.get(c.get("control_of"), "")
        if "length check agrees" not in said and "length check disagrees" not in said:
            continue
        for keys in (c.get("run_keys") or {}).values():
            for k in keys or ():
                verdict[k] = verdict.get(k, True) and "length check agrees" in said
    check_ok = _check_rows_agree(records.get("bound_length_check") or {})
    for key, said in (records.get("length_check_agreement") or {}).items():
        if key not in verdict:  # a run no claim's note decides (the check's own runs, a row no claim compares)
            verdict[key] = bool(said) and bool(check_ok) and all(check_ok.values())
    ok = sum(1 for k, v in flags.items() if v is True or (v == "schedule-bound" and verdict.get(k) is True))
    return ok, len(flags)


def _check_rows_agree(check):
    """``{(regime, row): agrees}`` recomputed from a chapter's length-check record (per seed test mAP
    of each row and AN at both lengths): the paired 95 % t-interval of row − AN (scipy) gives a
    verdict at each length (above 0, below 0, or across it), and the row agrees where the verdicts
    are the same at every length. Independent of the package's claims code."""
    import numpy as np
    from scipy import stats

    by = {}
    for label, cols in check.items():
        regime, row, length = [part.strip() for part in label.split("·")]
        by.setdefault((regime, row), {})[int(length.split()[0])] = cols["test_mAP"]
    out = {}
    for (regime, row), lengths in by.items():
        an = by.get((regime, "AN"))
        if row == "AN" or not an:
            continue
        seen = set()
        for length, values in lengths.items():
            d = np.array([values[s] - an[length][s] for s in values if s in an.get(length, {})], float)
            lo, hi = stats.t.interval(0.95, len(d) - 1, loc=d.mean(), scale=stats.sem(d))
            seen.add("above" if lo > 0 else "below" if hi < 0 else "across")
        out[(regime, row)] = len(lengths) >= 2 and len(seen) == 1
    return out


@pytest.mark.reports
@pytest.mark.parametrize("stem", ["02_gr_loss", "03_opml", "04_cls", "05_lac", "06_pu_mlc", "08_side_information"])
def test_every_chapter_ends_with_its_share_of_converged_runs_read_with_its_claims(stem):
    """Bug caught: 03 and 08 stated their share before their claims were read ("waits for the
    length checks ... read with the claims below") and never again, so those chapters printed no
    share at all; a share whose counts differ from the chapter's own records."""
    from mlpl_lab.reporting.report import read_records

    for path in _given(stem):
        said = [m for _, text in _outputs(path) for m in re.findall(r"Share converged: [^\n]*", text)]
        assert said, f"{path.name} states no share of converged runs"
        last = said[-1]
        assert "waits for" not in last, last
        ok, n = _count_share(read_records(path))
        assert last.startswith(f"Share converged: {ok} of {n} distinct runs"), (last[:120], ok, n)
