"""Plain ``papermill`` runs every notebook that shows a widget panel to its end.

A user's ``papermill notebooks/04_cls.ipynb out.ipynb -p profile cpu`` waited forever at the
panel cell (03 at its own): nbclient lost the kernel's ``execute_reply`` after its Output widget
mimic wrote to the kernel (see tests/test_panel_display.py and mlpl_lab/viz/panel_display.py).
``mlpl-lab report`` never showed it, because its kernel client re-polls (kernel_config); this
test runs the command line a user runs: no ``--log-output`` (its extra output changed the timing
enough to hide the hang), no config of the lab's, the cpu profile served from the shipped course
pack (imported once, by the first notebook, into a store of this module's: as a student's store
after their first notebook).

Oracle: the papermill process's exit within a limit, the store's runs before and after (a
notebook that trained would have added runs), and the executed notebook's saved widget state (the
panel's image). The hang was a race (03 and 04 waited in about half their runs under cpu on the
loaded 2-core machine); one run each is a check, not a proof: tests/test_panel_display.py is the
reliable guard.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[0]))  # tests/: the json-only pack reader
from pack_keys import pack_keys as served_keys  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
#: seconds a notebook served from the pack may take before the run counts as hung (a hang never
#: ends; served from the pack each took 38-182 s on the loaded 2-core machine)
LIMIT_S = 600


def shows_a_panel(path: Path) -> bool:
    nb = json.loads(path.read_text(encoding="utf-8"))
    return any(c["cell_type"] == "code" and "Panel(" in "".join(c["source"]) for c in nb["cells"])


WIDGET_NOTEBOOKS = sorted(p.name for p in NOTEBOOKS.glob("[0-9][0-9]_*.ipynb") if shows_a_panel(p))


def test_the_widget_notebooks_are_found():
    """The list below is read from the notebooks; a notebook whose panel the reader missed would
    go untested."""
    assert WIDGET_NOTEBOOKS == ["02_gr_loss.ipynb", "03_opml.ipynb", "04_cls.ipynb", "05_lac.ipynb",
                                "06_pu_mlc.ipynb", "08_side_information.ipynb"]


def _papermill() -> list:
    script = Path(sys.executable).with_name("papermill")
    return [str(script)] if script.exists() else [sys.executable, "-m", "papermill"]


def _last_cell(out: Path) -> str:
    """The cell papermill was executing when it was stopped, from the notebook it saved."""
    try:
        nb = json.loads(out.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return "none saved"
    started = [i for i, c in enumerate(nb["cells"]) if c.get("metadata", {}).get("papermill", {}).get("status")
               in ("running", "completed")]
    if not started:
        return "no cell started"
    i = started[-1]
    return f"cell index {i} (`{''.join(nb['cells'][i]['source']).splitlines()[0][:80]}`)"


@pytest.fixture(scope="module")
def data_dir(tmp_path_factory):
    """The store the notebooks share: empty until the first notebook imports the shipped pack."""
    from mlpl_lab.runs.shipped import shipped_pack

    if shipped_pack("cpu") is None:
        pytest.skip("no cpu course pack shipped (data/packs/cpu-course/)")
    return tmp_path_factory.mktemp("papermill-store")


def _stored(data: Path) -> set:
    runs = data / "runs"
    return {p.name for p in runs.iterdir() if (p / "summary.json").exists()} if runs.is_dir() else set()


@pytest.mark.notebook
@pytest.mark.slow
@pytest.mark.timeout(LIMIT_S + 120)
@pytest.mark.parametrize("name", WIDGET_NOTEBOOKS)
def test_plain_papermill_runs_the_widget_notebook_to_its_end(name, data_dir, tmp_path):
    """Bugs caught: a panel cell at which plain papermill waits forever (the run passes the
    limit: the test kills papermill and its kernel and fails, naming the cell); a notebook that
    trains instead of serving the pack; a panel that shows no image in the notebook papermill saves."""
    from mlpl_lab.reporting.html_export import WIDGET_VIEW, widget_contents

    env = {k: v for k, v in os.environ.items()
           if not k.startswith("MLPL_LAB_")}  # no chapter, profile or figure log of a report
    env |= {"MLPL_LAB_DATA": str(data_dir), "MLPL_LAB_PROGRESS": "0"}
    before = _stored(data_dir)
    out = tmp_path / name
    cmd = _papermill() + [str(NOTEBOOKS / name), str(out), "-p", "profile", "cpu",
                          "--cwd", str(NOTEBOOKS)]
    t0 = time.perf_counter()
    # its own session: on a hang the papermill process and the kernel it started are killed together
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            start_new_session=True)
    try:
        log, _ = proc.communicate(timeout=LIMIT_S)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.communicate()
        pytest.fail(f"plain papermill on {name} (cpu, served from the pack) had not ended after {LIMIT_S} s; "
                    f"it was at {_last_cell(out)}")
    seconds = time.perf_counter() - t0
    print(f"plain papermill {name} under cpu: {seconds:.0f} s", file=sys.stderr)
    assert proc.returncode == 0, f"papermill on {name} failed:\n{log.decode(errors='replace')[-3000:]}"
    trained = _stored(data_dir) - before - served_keys(ROOT / "data" / "packs" / "cpu-course")
    assert not trained, f"{name} trained {len(trained)} runs the shipped pack should have served"
    nb = json.loads(out.read_text(encoding="utf-8"))
    views = [o["data"][WIDGET_VIEW]["model_id"] for c in nb["cells"] if c["cell_type"] == "code"
             and "Panel(" in "".join(c["source"]) for o in c.get("outputs", []) if WIDGET_VIEW in o.get("data", {})]
    assert views, f"{name}: the panel cell shows no widget"
    assert all(widget_contents(nb, v)["pngs"] for v in views), f"{name}: a panel holds no image"
