"""The old-vs-new claims table: snapshots of hand-made executed notebooks, reasons derived by hand.

Bugs these catch: a verdict change explained by the wrong cause (n and m swapped, a sign change
called a shrink), an unchanged claim reported as changed, a claim that only one series states
lost from the table, the handbook's prose outside the markers overwritten, a damaged old record
writing anything."""
from __future__ import annotations

import json

import pytest

from mlpl_lab.course import claims_change as cc


def _nb(path, claims, end="2026-11-28T10:00:00"):
    from mlpl_lab.reporting.report import RECORD_MIME

    nb = {"cells": [{"cell_type": "code", "execution_count": 1, "id": "c0", "metadata": {}, "source": "",
                     "outputs": [{"output_type": "display_data", "metadata": {},
                                  "data": {RECORD_MIME: {"name": "claims", "value": claims}}}]}],
          "nbformat": 4, "nbformat_minor": 5,
          "metadata": {"papermill": {"parameters": {"profile": "cpu"}, "end_time": end}}}
    path.write_text(json.dumps(nb))


def claim(verdict, margin, lo, hi, n=5, m=1, converged=True, at_risk=False):
    return {"verdict": verdict, "margin": margin, "ci_family": [lo, hi], "ci95": [lo, hi], "n": n,
            "seeds": list(range(1, n + 1)), "family": "f", "family_size": m, "converged": converged,
            "at_risk": at_risk, "kind": "finding"}


def test_reasons_name_each_difference_that_moves_a_verdict():
    old = claim("holds", 2.0, 0.5, 3.5, n=5, m=1)
    # fewer seeds and a bigger family: both named, with the inconclusive rule below 3 seeds
    new = claim("inconclusive", 2.0, -4.0, 8.0, n=2, m=4)
    why = cc.reasons(old, new)
    assert why[0] == "paired seeds 5 → 2 (below 3 a claim is inconclusive)"
    assert why[1].startswith("family size m 1 → 4")
    assert "margin +2.00 → +2.00" in why
    assert "the deciding interval's width 3.00 → 12.00 (4.00×)" in why
    # a sign change is called one, not a shrink
    assert cc.reasons(claim("holds", 1.0, 0.2, 1.8), claim("does not hold", -0.5, -1.0, -0.1))[0] == \
        "the margin changed sign: +1.00 → -0.50"
    # the same verdict needs no reason; a change with nothing else different is seed noise
    assert cc.reasons(old, claim("holds", 9.0, 8.0, 10.0, n=3, m=7)) == []
    assert cc.reasons(claim("holds", 1.0, 0.1, 1.9, converged=None), claim("inconclusive", 1.0, -0.1, 2.1,
                                                                        converged=None)) == \
        ["margin +1.00 → +1.00", "the deciding interval's width 1.80 → 2.20 (1.22×)"]
    assert cc.reasons({"verdict": "holds"}, {"verdict": "inconclusive"}) == \
        ["none of the above changed: the runs' own values moved the interval"]
    assert "at risk (its losing side did not converge)" in cc.reasons(
        claim("holds", 1.0, 0.1, 1.9), claim("inconclusive", 1.0, -0.1, 2.1, converged=False, at_risk=True))


def test_the_table_pairs_claims_across_series_and_lands_between_the_markers(tmp_path):
    old_dir, new_dir = tmp_path / "old", tmp_path / "new"
    old_dir.mkdir(), new_dir.mkdir()
    _nb(old_dir / "02_gr_loss.ipynb", {"GR beats AN": claim("holds", 10.0, 9.0, 11.0),
                                       "dropped": claim("holds", 1.0, 0.5, 1.5)}, end="2026-11-27T10:00:00")
    _nb(new_dir / "02_gr_loss.ipynb", {"GR beats AN": claim("holds", 8.0, 7.0, 9.0),
                                       "added": claim("inconclusive", 0.1, -1.0, 1.2, n=3)})
    old = cc.snapshot(old_dir)
    assert old["dates"] == ["2026-11-27"] and set(old["notebooks"]["02_gr_loss"]) == {"GR beats AN", "dropped"}
    rows = {r["claim"]: r for r in cc.change_rows(old, cc.snapshot(new_dir))}
    assert rows["GR beats AN"]["why"] == "unchanged"
    assert rows["GR beats AN"]["old"] == "+10.00 [+9.00, +11.00], n=5: **holds**"
    assert rows["added"]["why"] == "new in this pack" and rows["added"]["old"] == "—"
    assert rows["dropped"]["why"] == "not stated by this pack's design" and rows["dropped"]["new"] == "—"

    old_file = tmp_path / "old.json"
    old_file.write_text(json.dumps(old))
    page = tmp_path / "handbook.md"
    page.write_text(f"before\n{cc.BEGIN}\nstale\n{cc.END}\nafter\n")
    assert cc.write_change(old_file, new_dir, page=page)
    text = page.read_text()
    assert text.startswith("before\n") and text.endswith("\nafter\n") and "stale" not in text
    assert "3 claims, 1 with the same verdict, 2 changed, added or dropped" in text
    assert "The previous pack's claims (`old.json`: " in text  # two packs of one day told apart by the record
    assert not cc.write_change(old_file, new_dir, page=page)  # current: nothing to write


def test_bad_inputs_are_clear_errors_and_write_nothing(tmp_path):
    page = tmp_path / "handbook.md"
    page.write_text(f"x\n{cc.BEGIN}\nkept\n{cc.END}\n")
    bad = tmp_path / "old.json"
    bad.write_text("{not json")
    with pytest.raises(ValueError, match="claims-snapshot"):
        cc.write_change(bad, tmp_path, page=page)
    assert "kept" in page.read_text()
    with pytest.raises(ValueError, match="no executed notebook with claims"):
        cc.snapshot(tmp_path)
    nomark = tmp_path / "plain.md"
    nomark.write_text("no markers\n")
    with pytest.raises(ValueError, match="no claims-change markers"):
        cc.write_change(bad, tmp_path, page=nomark)


def test_the_commands_name_what_is_missing(tmp_path, capsys, monkeypatch):
    """Bug caught: the command crashing or writing a page without markers, a snapshot with no
    --out written over the book's folder, --check writing."""
    from mlpl_lab import cli

    new_dir = tmp_path / "new"
    new_dir.mkdir()
    _nb(new_dir / "02_gr_loss.ipynb", {"GR beats AN": claim("holds", 8.0, 7.0, 9.0)})
    assert cli.main(["course", "claims-change", "--executed", str(new_dir)]) == 1
    assert "give --old FILE" in capsys.readouterr().out
    assert cli.main(["course", "claims-snapshot", "--executed", str(new_dir)]) == 1
    assert "give --out FILE" in capsys.readouterr().out
    out = tmp_path / "snap.json"
    assert cli.main(["course", "claims-snapshot", "--executed", str(new_dir), "--out", str(out)]) == 0
    assert json.loads(out.read_text())["notebooks"]["02_gr_loss"]["GR beats AN"]["verdict"] == "holds"

    page = tmp_path / "handbook.md"
    monkeypatch.setattr(cc, "HANDBOOK", page)
    page.write_text("no markers\n")
    assert cli.main(["course", "claims-change", "--executed", str(new_dir), "--old", str(out)]) == 1
    assert "no claims-change markers" in capsys.readouterr().out and page.read_text() == "no markers\n"
    page.write_text(f"{cc.BEGIN}\nstale\n{cc.END}\n")
    args = ["course", "claims-change", "--executed", str(new_dir), "--old", str(out)]
    assert cli.main(args + ["--check"]) == 1 and "stale" in page.read_text()  # --check writes nothing
    assert cli.main(args) == 0 and "stale" not in page.read_text()
    assert cli.main(args + ["--check"]) == 0  # now current


def keyed(key, sentence, *args, **kw):
    """A claim of a record keyed by its identifier, its sentence a field beside it."""
    return dict(claim(*args, **kw), id=key, claim=sentence)


def test_claims_pair_by_identifier_where_both_records_have_one():
    """Bug caught: a claim whose sentence names a choice made on validation (the best other method)
    shown as one claim dropped and another added when the choice changes, or two claims paired
    because their sentences match while their identifiers differ. Oracle: the pairs written out."""
    old = {"notebooks": {"02_gr_loss": {
        "gr_beats_best_other": keyed("gr_beats_best_other", "GR beats the best other zoo method (EM)", "holds", 2.0, 1.0, 3.0),
        "gr_beats_an": keyed("gr_beats_an", "GR beats AN (single positive)", "holds", 9.0, 8.0, 10.0)}}}
    new = {"notebooks": {"02_gr_loss": {
        "gr_beats_an": keyed("gr_beats_an", "GR beats AN (single positive)", "holds", 9.5, 8.5, 10.5),
        "gr_beats_best_other": keyed("gr_beats_best_other", "GR beats the best other zoo method (Hill)",
                                     "inconclusive", 0.5, -0.5, 1.5)}}}
    rows = cc.change_rows(old, new)
    assert len(rows) == 2
    best = next(r for r in rows if "best other" in r["claim"])
    assert best["claim"] == ("GR beats the best other zoo method (Hill) (the previous pack: GR beats the best "
                             "other zoo method (EM))")
    assert best["old"].endswith("**holds**") and best["new"].endswith("**inconclusive**")
    assert best["why"].startswith("margin +2.00 → +0.50")
    # the same sentence under another identifier is another claim
    other = {"notebooks": {"02_gr_loss": {
        "x": keyed("x", "GR beats AN (single positive)", "holds", 9.5, 8.5, 10.5)}}}
    whys = sorted(r["why"] for r in cc.change_rows(old, other))
    assert whys == ["new in this pack", "not stated by this pack's design", "not stated by this pack's design"]


#: a record of the layout made before claims had identifiers (the course's records of 2026-11-30):
#: claims keyed by their sentence, no ``id`` field; this entry copied from the one of that date
OLDER_RECORD = {
    "what": "the claims of one executed series (mlpl-lab course claims-snapshot)",
    "made": "2026-11-30T01:29:48+00:00", "profile": "cpu", "dates": ["2026-11-30"],
    "notebooks": {"02_gr_loss": {
        "GR beats AN (single positive)": {
            "verdict": "holds", "margin": 11.59850925207138, "ci_family": [10.604991820474474, 12.592026683668287],
            "ci95": [10.604991820474474, 12.592026683668287], "n": 5, "seeds": [1, 2, 3, 4, 5],
            "family": "GR beats AN", "family_size": 1, "converged": False, "at_risk": False,
            "losing_side": None, "schedule_bound": "schedule-bound; the length check agrees", "waiting_for": None},
        "GR beats AN with both trained 72 epochs (length check)": dict(
            claim("holds", 6.5, 5.0, 8.0), family="GR beats AN, length check")}}}


def test_an_older_record_pairs_by_the_sentence(tmp_path):
    """A record made before claims had identifiers is keyed by the sentence: a new record's claims
    pair with it by their ``claim`` field, and one the new record does not state is a row of its
    own. Read from a file, as ``--old`` reads it."""
    path = tmp_path / "claims_cpu_2026-11-30.json"
    path.write_text(json.dumps(OLDER_RECORD, indent=1))
    old = cc.read_record(path.read_text())
    assert old == OLDER_RECORD  # no format: read as it is
    sentence = "GR beats AN (single positive)"
    before = old["notebooks"]["02_gr_loss"][sentence]
    assert "id" not in before  # an older record
    new = {"notebooks": {"02_gr_loss": {"gr_beats_an": dict(before, id="gr_beats_an", claim=sentence)}}}
    rows = [r for r in cc.change_rows(old, new) if r["notebook"] == "02_gr_loss"]
    row = next(r for r in rows if r["claim"] == sentence)
    assert row["why"] == "unchanged" and row["old"] == row["new"]
    assert sum(r["why"] == "new in this pack" for r in rows) == 0
    other = next(r for r in rows if r["claim"] != sentence)
    assert len(rows) == 2 and other["claim"].endswith("(length check)") and other["new"] == "—"
    assert other["why"] == "not stated by this pack's design"


def test_a_snapshot_is_one_claim_per_line_and_reads_back_whole():
    """The record's text (format 2): reads back to the snapshot it was written from (the dict is
    the oracle), one line per claim, non-ASCII kept as written, no ``id`` where it is the claim's
    key and no null field. Bug caught: a claim split over lines (records grow threefold and their
    diffs stop naming claims), a field or a claim lost, an id that differs from its key dropped,
    a null written out, an escaped sentence."""
    def full(c):
        return {k: c.get(k) for k in ("id", "claim", "verdict", "verdict_alone", "margin", "ci_family", "ci95", "n",
                                      "seeds", "family", "family_size", "converged", "at_risk", "losing_side",
                                      "schedule_bound", "waiting_for")}
    record = {"what": "w", "made": "2026-12-05T00:00:00+00:00", "profile": "cpu", "dates": ["2026-12-05"],
              "notebooks": {"02_gr_loss": {"a": full(keyed("a", "GR (all on) beats the ablation row 'k̂'", "holds", 1.5, 0.5, 2.5)),
                                           "b": full(keyed("other", "GR beats AN", "inconclusive", 0.1, -1.0, 1.2, n=2))},
                            "05_lac": {"c": full(dict(keyed("c", "LAC beats AN", "does not hold", -3.0, -4.0, -2.0),
                                                      schedule_bound="schedule-bound"))}}}
    text = cc.snapshot_text(record)
    assert cc.read_record(text) == record
    raw = json.loads(text)
    assert raw["format"] == 2
    claims = {name: c for nb in raw["notebooks"].values() for name, c in nb.items()}
    assert "id" not in claims["a"] and claims["b"]["id"] == "other"
    assert "losing_side" not in claims["c"] and claims["c"]["schedule_bound"] == "schedule-bound"
    assert not any(v is None for c in claims.values() for v in c.values())
    lines = text.splitlines()
    for name, c in claims.items():
        assert sum(line.strip().startswith(json.dumps(name) + ": {") for line in lines) == 1
        assert any(json.loads(line.strip().rstrip(",").split(": ", 1)[1]) == c for line in lines
                   if line.strip().startswith(json.dumps(name) + ": {"))
    # 5 head fields (with format), the "notebooks" line, per notebook its line, its claims and its
    # closing brace, the end
    assert "k̂" in text and len(lines) == 5 + 1 + (1 + 2 + 1) + (1 + 1 + 1) + 1


def test_a_snapshot_keeps_eight_significant_digits(tmp_path):
    """Bug caught: a record carrying every float digit (a third of its bytes), or so few that a
    margin prints otherwise than the notebook printed it (11.975024 kept as 11.975 prints 11.97).
    Oracle: the digits written out by hand."""
    new_dir = tmp_path / "new"
    new_dir.mkdir()
    _nb(new_dir / "02_gr_loss.ipynb", {"x": claim("holds", 11.975023925304413, 14.61778800044207, 0.000123456789)})
    c = cc.snapshot(new_dir)["notebooks"]["02_gr_loss"]["x"]
    assert c["margin"] == 11.975024 and c["ci_family"] == [14.617788, 0.00012345679] and c["n"] == 5
    assert f"{c['margin']:+.2f}" == "+11.98"


def test_the_table_shows_the_claims_whose_cell_moved_and_counts_the_rest(tmp_path):
    """Bug caught: a table of 87 rows of two equal cells hiding the one that moved, a moved margin
    with the same verdict left out, the count of alike claims wrong. Oracle: three hand-made claims,
    one moved (same verdict), one changed verdict, one alike."""
    old_dir, new_dir = tmp_path / "old", tmp_path / "new"
    old_dir.mkdir(), new_dir.mkdir()
    _nb(old_dir / "02_gr_loss.ipynb", {"moved": claim("holds", 3.0, 2.0, 4.0), "flip": claim("holds", 1.0, 0.2, 1.8),
                                       "alike": claim("holds", 5.0, 4.0, 6.0)})
    _nb(new_dir / "02_gr_loss.ipynb", {"moved": claim("holds", 3.5, 2.5, 4.5), "flip": claim("inconclusive", 0.5, -0.2, 1.2),
                                       "alike": claim("holds", 5.0, 4.0, 6.0)})
    text = cc.change_markdown(cc.snapshot(old_dir), cc.snapshot(new_dir))
    rows = [line for line in text.splitlines() if line.startswith("| 02_gr_loss |")]
    assert [r.split(" | ")[1] for r in rows] == ["moved", "flip"]
    assert "3 claims, 2 with the same verdict, 1 changed, added or dropped" in text
    assert "The table shows the 2 whose cell moved" in text
    assert "1 claim reads the same in both packs (margin, interval, paired seeds and verdict): 02_gr_loss 1." in text
    same = cc.change_markdown(cc.snapshot(old_dir), cc.snapshot(old_dir))
    assert "| notebook |" not in same and "3 claims read the same in both packs" in same
    assert "\n\n\n" not in same and "\n\n" in same  # one blank line between the sentence and the count
