"""``mlpl-lab`` argument errors: each is answered before any work, naming the fix."""
from __future__ import annotations

import os
import time

import pytest

from mlpl_lab import cli
from mlpl_lab.commands import arguments, benchmark_csv, fresh, plan, progress, series
from mlpl_lab.commands.errors import CommandError, UsageError


def run(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    return exc.value.code, capsys.readouterr().err


@pytest.mark.parametrize("argv, match", [
    (["report", "--notebooks"], "needs at least one name"),
    (["report", "--notebooks", "0"], "matches several notebooks"),
    (["report", "--notebooks", "02", "02_gr_loss"], "named twice"),
    (["report", "--notebooks", "99"], "no notebook matches"),
    # a family's name after --notebooks (argparse's nargs="*" takes it): the error says where it goes
    (["train", "--notebooks", "07", "longer: data sets: printed letters"], "put other words (a family's name"),
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
    names = [p.stem for p in arguments.notebook_paths(["02", "00_partial_labels"])]
    assert names == ["00_partial_labels", "02_gr_loss"]
    assert len(arguments.notebook_paths(None)) >= 5


def test_store_command_lists_and_clears(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("MLPL_LAB_DATA", str(tmp_path))
    assert cli.main(["store"]) == 0
    assert "0 runs" in capsys.readouterr().out
    assert cli.main(["store", "--clear"]) == 0


# --------------------------------------------------------------- data arguments (audit §5)
def test_data_arguments_are_checked_and_a_relative_root_resolved(tmp_path, monkeypatch):
    """Bugs caught: a relative --root resolved against notebooks/ in the kernel but the caller's
    directory in the CSV step; a missing root failing inside the kernel; --root/--layout
    silently ignored with the scenes."""
    import argparse

    (tmp_path / "pascal").mkdir()
    monkeypatch.chdir(tmp_path)
    args = argparse.Namespace(dataset="voc2012", root="pascal", layout=None)
    arguments.check_data_args(args)
    assert args.root == str(tmp_path / "pascal") and args.layout == "cole"
    with pytest.raises(UsageError, match="is not a folder"):
        arguments.check_data_args(argparse.Namespace(dataset="voc2012", root="nowhere", layout=None))
    with pytest.raises(UsageError, match="needs --root"):
        arguments.check_data_args(argparse.Namespace(dataset="voc2012", root=None, layout=None))
    for root, layout in (("pascal", None), (None, "voc_raw")):
        with pytest.raises(UsageError, match="not the embedded scenes"):
            arguments.check_data_args(argparse.Namespace(dataset="scenes", root=root, layout=layout))


@pytest.mark.parametrize("argv, match", [
    (["benchmark", "--dataset", "voc2012", "--root", "no/such/folder"], "is not a folder"),
    (["benchmark", "--root", "."], "not the embedded scenes"),
    (["report", "--fresh", "--fresh-after", "1"], "not allowed with"),
    (["report", "--fresh-after", "yesterday"], "UNIX time"),
])
def test_bad_data_and_fresh_arguments_fail_before_any_work(argv, match, capsys, monkeypatch, tmp_path):
    """Bug caught: these arguments reaching papermill (or training) before failing."""
    monkeypatch.setattr(series, "run_notebooks", lambda *a, **k: pytest.fail("work started"))
    code, err = run(argv + ["--out", str(tmp_path)], capsys)
    assert code == 2 and match in err


def test_fresh_records_its_time_and_a_resumed_report_reuses_it(tmp_path, monkeypatch):
    """Bug caught: an interrupted `--fresh` report could only be resumed with a new --fresh,
    retraining the runs the first invocation had already made."""
    import argparse

    from mlpl_lab.runs.store import FRESH_ENV

    # setenv first, so that monkeypatch records the variable's state before the test and puts it
    # back (delenv of an absent variable records nothing, and set_fresh writes os.environ itself:
    # the stamp leaked into later tests, which then refused every run made before it)
    monkeypatch.setenv(FRESH_ENV, "0")
    monkeypatch.delenv(FRESH_ENV)
    first = argparse.Namespace(fresh=True, fresh_after=None)
    before = time.time()
    fresh.set_fresh(first, tmp_path)
    stamp = float(os.environ[FRESH_ENV])
    assert before <= stamp <= time.time()
    monkeypatch.setenv(FRESH_ENV, "0")
    resumed = argparse.Namespace(fresh=False, fresh_after=fresh.parse_fresh_after("last", str(tmp_path)))
    fresh.set_fresh(resumed, tmp_path)
    assert float(os.environ[FRESH_ENV]) == stamp  # the first invocation's time, not now
    with pytest.raises(UsageError, match="start with --fresh"):
        fresh.parse_fresh_after("last", str(tmp_path / "elsewhere"))


@pytest.mark.parametrize("flags", [["--fresh"], ["--fresh-after", "1"], ["--cold"]])
def test_a_fresh_report_or_its_resumption_imports_no_course_pack(flags, tmp_path, monkeypatch):
    """Bug caught: resuming an interrupted cold series (`--fresh-after last`) imported the shipped
    pack into the series' store, mixing the previous series' runs into the new one."""
    from mlpl_lab.commands import report

    imported = []
    monkeypatch.setattr(report, "import_shipped_pack", lambda profile: imported.append(profile))
    # the series runs the import it is given before it plans (while its first kernels start)
    monkeypatch.setattr(report, "run_series", lambda *a, before_plan=None, **kw: before_plan and before_plan())
    monkeypatch.setattr(report, "cold_estimate", lambda *a, **kw: "")
    monkeypatch.setenv("MLPL_LAB_DATA", str(tmp_path / "data"))
    from mlpl_lab.cli import main

    assert main(["report", "--profile", "smoke", "--out", str(tmp_path / "out"), *flags]) == 0
    assert imported == []
    assert main(["report", "--profile", "smoke", "--out", str(tmp_path / "out")]) == 0
    assert imported == ["smoke"]  # an ordinary report does import it


def test_a_cold_report_trains_the_pending_runs_and_an_ordinary_one_does_not(tmp_path, monkeypatch):
    """Bug caught: the cold series that makes the pack leaving out the runs the chapters design as
    pending (length checks, longer runs, 07's data sets), so the pack it made could never
    serve them. Oracle: what the series (and the kernels it starts) see in the environment."""
    from mlpl_lab.commands import report

    seen = []
    monkeypatch.setattr(report, "import_shipped_pack", lambda profile: None)
    monkeypatch.setattr(report, "run_series",
                        lambda *a, **kw: seen.append(os.environ.get("MLPL_LAB_TRAIN_PENDING")))
    monkeypatch.setattr(report, "cold_estimate", lambda *a, **kw: "")
    monkeypatch.setenv("MLPL_LAB_DATA", str(tmp_path / "data"))
    monkeypatch.delenv("MLPL_LAB_TRAIN_PENDING", raising=False)
    from mlpl_lab.cli import main

    assert main(["report", "--profile", "smoke", "--out", str(tmp_path / "out"), "--cold"]) == 0
    assert main(["report", "--profile", "smoke", "--out", str(tmp_path / "out")]) == 0
    assert seen == ["1", None]
    assert "MLPL_LAB_TRAIN_PENDING" not in os.environ  # put back after the series


def test_the_csv_step_never_trains(tmp_path, monkeypatch):
    """Bug caught: the CSV step silently retraining the whole grid when the sources changed while
    the report ran (its keys then differ from the notebook's): it reads only, and a change of
    the numerics version during notebook 07 stops it with the reason."""
    from mlpl_lab.runs import ensure, ensure as run_ensure
    from mlpl_lab.profiles import get_profile

    monkeypatch.setenv("MLPL_LAB_DATA", str(tmp_path))
    P = get_profile("smoke", init="scratch")
    monkeypatch.setattr(run_ensure, "fit", lambda *a, **k: pytest.fail("trained"))
    with ensure.read_only("the CSV step"):
        with pytest.raises(RuntimeError, match="not in the store.*the CSV step"):
            ensure.ensure([P.spec("an")])

    from mlpl_lab.core import numerics

    bumped = dict(numerics.VERSIONS, **{"method.gr": numerics.VERSIONS["method.gr"] + 1})
    versions = iter([dict(numerics.VERSIONS), bumped])  # before, after
    monkeypatch.setattr(numerics, "versions_on_disk", lambda: next(versions))
    monkeypatch.setattr(series, "execute_notebook", lambda path, out, *a, **k: path)
    monkeypatch.setattr(benchmark_csv, "write_benchmark_csv", lambda *a, **k: pytest.fail("CSV written"))
    monkeypatch.setattr("mlpl_lab.reporting.report.read_records", lambda path: {})
    monkeypatch.setenv("MLPL_LAB_PROGRESS_FILE", str(tmp_path / "progress"))
    bench = [p for p in arguments.notebook_paths() if p.stem == benchmark_csv.BENCHMARK_NOTEBOOK]
    with pytest.raises(CommandError, match="numerics versions changed while 07_benchmark.*method.gr"):
        series.run_notebooks(bench, tmp_path, "smoke")


def test_progress_of_a_later_notebook_shows_only_its_own_lines(tmp_path, capsys):
    """Bug caught: each notebook's progress tail started at the file's beginning, re-printing
    every earlier notebook's lines."""
    log = tmp_path / "progress.log"
    log.write_text("[00] an earlier notebook's line\n")
    tail = progress.Tail(log)
    with open(log, "a") as f:
        f.write("[01] this notebook's line\n")
    tail.poll()
    out = capsys.readouterr().out
    assert "this notebook's line" in out and "earlier" not in out


def test_a_command_leaves_the_callers_environment_as_it_was(monkeypatch):
    """Bug caught: `mlpl-lab report` run in-process (tests, a notebook) left MLPL_LAB_CHAPTER and
    MLPL_LAB_PROFILE set, so the caller's later store reads were logged as a chapter's (an
    `.access` folder appeared in stores no report touched); also a command that fails half-way."""
    from mlpl_lab.runs.access import CHAPTER_ENV, PROFILE_ENV

    monkeypatch.delenv(CHAPTER_ENV, raising=False)
    monkeypatch.setenv(PROFILE_ENV, "before")
    before = dict(os.environ)

    def sets_and_fails(args):
        os.environ[CHAPTER_ENV] = "02_x"
        os.environ[PROFILE_ENV] = "cpu"
        os.environ["MLPL_LAB_PROGRESS_FILE"] = "/tmp/x"
        raise CommandError("failed after setting the environment")

    monkeypatch.setattr(plan, "cmd_plan", sets_and_fails)
    with pytest.raises(SystemExit):
        cli.main(["plan", "--profile", "smoke"])
    assert dict(os.environ) == before
