"""``mlpl-lab`` argument errors: each is answered before any work, naming the fix."""
from __future__ import annotations

import pytest

from mlpl_lab import cli


def run(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    return exc.value.code, capsys.readouterr().err


@pytest.mark.parametrize("argv, match", [
    (["report", "--notebooks"], "needs at least one name"),
    (["report", "--notebooks", "0"], "matches several notebooks"),
    (["report", "--notebooks", "02", "02_gr_loss"], "named twice"),
    (["report", "--notebooks", "99"], "no notebook matches"),
    (["report", "--profile", "nope"], "invalid choice"),
])
def test_bad_arguments(argv, match, capsys):
    code, err = run(argv, capsys)
    assert code == 2 and match in err


def test_an_out_folder_that_cannot_be_created(tmp_path, capsys):
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, err = run(["report", "--notebooks", "00", "--out", str(blocker / "reports")], capsys)
    assert code == 2 and "cannot be created or written" in err


def test_notebook_selection_is_exact_then_unique_prefix():
    names = [p.stem for p in cli.notebook_paths(["02", "00_partial_labels"])]
    assert names == ["00_partial_labels", "02_gr_loss"]
    assert len(cli.notebook_paths(None)) >= 5


def test_store_command_lists_and_clears(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MLPL_LAB_DATA", str(tmp_path))
    assert cli.main(["store"]) == 0
    assert "0 runs" in capsys.readouterr().out
    assert cli.main(["store", "--clear"]) == 0
