"""Run All in JupyterLab serves the shipped course pack, as papermill and ``make report`` do (issue 48).

A student opens ``02_gr_loss.ipynb`` in a real JupyterLab (headless Chromium), with the live
exercise switched off in its ``parameters`` cell, and presses Run → Run All Cells. The lab's
store starts without the pack. Oracles: the run keys of the pack's manifest, read here with
``tarfile`` (not through mlpl_lab); the store's folders before and after; the text the notebook
shows. The notebook must import the pack (its one-line notice), train nothing (every run it adds
to the store is one of the pack's) and run to its last cell without an error. The wall time is
printed, never asserted (speed figures come from the benchmark scripts).
"""
from __future__ import annotations

import json
import re
import sys
import tarfile
import time
from pathlib import Path

import nbformat
import pytest

from test_panels import _run_all, _wait_kernel_idle

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # tests/: the json-only pack reader
from pack_keys import pack_keys as served_keys  # noqa: E402

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
PACK = ROOT / "data" / "packs" / "cpu-course"
NOTEBOOK = "02_gr_loss.ipynb"
#: the input prompts of the notebook on screen (not of a tab left open in the background)
VISIBLE_PROMPTS = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputPrompt"


def _manifest_keys(path: Path) -> set:
    if path.is_dir():  # a pack of parts: its index
        return served_keys(path)
    with tarfile.open(path, "r:gz") as tar:
        first = tar.next()
        assert first.name == "manifest.json"
        return {r["key"] for r in json.loads(tar.extractfile(first).read())["runs"]}


def _stored(runs: Path) -> set:
    return {p.name for p in runs.iterdir() if (p / "summary.json").exists()} if runs.is_dir() else set()


def _copy_without_live_training(root: Path) -> None:
    """The notebook as shipped: its parameters cell must leave the live exercise untrained, so Run
    All serves the pack and trains nothing."""
    nb = nbformat.read(str(ROOT / "notebooks" / NOTEBOOK), as_version=4)
    [cell] = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
    assert re.search(r"^live_training = False\b", cell.source, re.M), \
        "the parameters cell must set live_training = False: Run All would train the live exercise"
    nbformat.write(nb, str(root / NOTEBOOK))


def _started(page, seconds: float) -> bool:
    """True once some code cell is queued, running or done ("[*]:" or "[3]:", not "[ ]:")."""
    deadline = time.time() + seconds
    while time.time() < deadline:
        prompts = page.locator(VISIBLE_PROMPTS).all_inner_texts()
        if any(re.fullmatch(r"\[(\*|\d+)\]:", p.strip()) for p in prompts):
            return True
        time.sleep(0.5)
    return False


@pytest.mark.skipif(not (PACK / "pack.json").is_file(), reason="no course pack shipped")
def test_run_all_in_jupyterlab_serves_the_shipped_pack(lab, browser, browser_home, out_dir):
    runs = browser_home / "data" / "runs"  # the lab's MLPL_LAB_DATA (conftest's `lab` fixture)
    before = _stored(runs)
    pack_keys = _manifest_keys(PACK)
    assert not pack_keys <= before, "the lab's store already holds the pack: nothing to test"
    _copy_without_live_training(lab.root)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        # a workspace of its own, reset: JupyterLab would otherwise restore the tabs an earlier test
        # left open (test_panels' notebook), and their cells would be counted here
        page.goto(lab.url(f"lab/workspaces/run-all/tree/{NOTEBOOK}") + "&reset", timeout=60_000)
        page.locator(".jp-Notebook").first.wait_for(timeout=60_000)
        _wait_kernel_idle(page)
        t0 = time.perf_counter()
        _run_all(page)
        if not _started(page, 60):  # the menu click was lost (a busy page): once more
            _run_all(page)
            assert _started(page, 60), "Run → Run All Cells started no cell"
        # every cell has run when each code cell's prompt shows its execution count ("[12]:", not
        # "[ ]:" or "[*]:") and the kernel is idle; the bound is far above the ~20-60 s this takes,
        # so a notebook that trains fails instead of hanging
        deadline, done = time.time() + 900, False
        while time.time() < deadline and not done:
            time.sleep(1)
            prompts = page.locator(VISIBLE_PROMPTS).all_inner_texts()
            idle = any(t.strip().endswith("| Idle") for t in
                       page.locator(".jp-StatusBar-TextItem").all_inner_texts())
            done = idle and bool(prompts) and all(re.fullmatch(r"\[\d+\]:", p.strip()) for p in prompts)
        seconds = time.perf_counter() - t0
        page.screenshot(path=str(out_dir / "run_all_02.png"), full_page=False)
        text = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook").first.inner_text()
        assert done, ("Run All did not run every cell within 900 s (a cell still runs: it trains?); "
                      f"prompts: {sorted(set(p.strip() for p in prompts))[:8]}")
        errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr'] "
                              ":text('Traceback')").count()
        assert "Traceback" not in text and errors == 0, "a cell raised: " + text[text.find("Traceback"):][:800]
        after = _stored(runs)
        added = after - before
        assert pack_keys <= after, f"{len(pack_keys - after)} of the pack's runs are not in the store"
        assert added <= pack_keys, f"Run All stored {len(added - pack_keys)} runs the pack does not hold: it trained"
        assert "[mlpl-lab] the store lacked " in text, "the notebook did not say it imported the pack"
        assert "must train" not in text
        print(f"\nRun All of {NOTEBOOK} in JupyterLab from the shipped pack: {seconds:.0f} s "
              f"({len(added)} runs imported); screenshot: {out_dir}")
    finally:
        page.close()
