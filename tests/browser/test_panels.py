"""Every widget panel of the lab in JupyterLab, in headless Chromium, as a student uses it.

A notebook with one cell per panel (GR, OPML, CLS, LAC, PU-MLC, side information; the LAC panel on a tiny model
trained in the cell) is opened and run through the Run menu. For each panel: it renders; every
slider's value readout is visible — ``document.elementFromPoint`` at the readout's centre is
the readout, not the plot; a slider moved with the keyboard (focus the handle, ArrowRight)
changes the plot image and the panel's readout line, which shows the new value. Screenshots
before and after go to the test's output folder. The update latency (key press → new plot on
screen) is printed, median over several moves — a figure, never an assertion on time.
"""
from __future__ import annotations

import re
import statistics
import time

import nbformat
import pytest

pytestmark = pytest.mark.browser

SETUP = '''
%matplotlib inline
import os, torch
os.environ["MLPL_LAB_PROGRESS"] = "0"
from mlpl_lab.viz.gr_panel import GRPanel
from mlpl_lab.viz.opml_panel import OPMLPanel
from mlpl_lab.viz.cls_panel import CLSPanel
from mlpl_lab.viz.lac_panel import LACPanel
from mlpl_lab.viz.pu_panel import PUPanel
from mlpl_lab.viz.side_info_panel import SideInfoPanel
'''
CELLS = {
    "gr": "GRPanel(num_epochs=8)",
    "opml": "_ = OPMLPanel()",
    "cls": "CLSPanel()",
    "lac": '''from mlpl_lab.data import make_splits
from mlpl_lab.engine.train import TrainConfig, fit
splits = make_splits(n_train=96, n_val=48, n_test=48, seed=0, image_size=16)
cfg = TrainConfig(epochs=1, batch_size=32, model="small_cnn", progress=False, probes=(),
                  model_kwargs={"width": 4, "head": "label_query"})
LACPanel(fit("lac_plc", splits.train, splits.val, splits.test, cfg).method, splits.train, indices=range(32)).widget''',
    "pu": '''g = torch.Generator().manual_seed(0)
logits = torch.randn(128, 20, generator=g, dtype=torch.float64) * 0.5
observed = torch.where(torch.rand(128, 20, generator=g) < 0.1, 1, -1)
PUPanel(logits=logits, observed=observed).widget''',
    "side-info": '''import numpy as np, pandas as pd
rng = np.random.default_rng(0)
y = (rng.uniform(size=(400, 6)) < 0.3).astype(int)
p = np.clip(0.4 * y + rng.uniform(0, 0.6, size=y.shape), 0, 1)
obs = np.where((y == 1) & (rng.uniform(size=y.shape) < 0.3), 1, -1)
s = {"p_val": p[:200], "y_val": y[:200], "obs_val": obs[:200], "p_test": p[200:], "y_test": y[200:]}
curve = pd.DataFrame({"gain": [-1.0, 1.0, 2.0, 0.5], "low": [-2.0, 0.0, 1.0, -0.5], "high": [0.0, 2.0, 3.0, 1.5]},
                     index=[0.5, 0.75, 1.0, 2.0])
SideInfoPanel(curve, {"Crisp": s}, calibration=100).widget''',
}
MOVES = 5
#: the slider each panel's test moves (matched in its label)
MOVED = {"gr": "q₂", "opml": "a (", "cls": "τ_h", "lac": "δ", "pu": "γ", "side-info": "α ("}


def _write_notebook(root):
    nb = nbformat.v4.new_notebook()
    nb.cells = [nbformat.v4.new_code_cell(SETUP.strip())] + [nbformat.v4.new_code_cell(c) for c in CELLS.values()]
    nb.metadata["kernelspec"] = {"display_name": "Python 3", "language": "python", "name": "python3"}
    nbformat.write(nb, str(root / "panels.ipynb"))


def _wait_kernel_idle(page, timeout=90):
    deadline = time.time() + timeout
    while time.time() < deadline:
        texts = page.locator(".jp-StatusBar-TextItem").all_inner_texts()
        if any(t.strip().endswith("| Idle") for t in texts):
            return
        time.sleep(0.3)
    raise AssertionError(f"the kernel never reported '| Idle' (status bar: {texts})")


def _run_all(page):
    page.locator(".lm-MenuBar-itemLabel:text-is('Run')").click()
    page.locator(".lm-Menu-itemLabel:text-is('Run All Cells')").click()


def _readout_covered(page, readout) -> str | None:
    """None when the readout is visible at its centre; else what covers it."""
    return readout.evaluate(
        """el => { const r = el.getBoundingClientRect();
                   if (r.width < 2 || r.height < 2) return 'zero size';
                   const hit = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
                   return (hit === el || el.contains(hit)) ? null : (hit ? hit.tagName + '.' + hit.className : 'nothing'); }""")


def _numbers(text: str):
    return [float(x) for x in re.findall(r"-?\d+(?:\.\d+)?(?:e-?\d+)?", text)]


def test_every_panel_in_jupyterlab(lab, browser, out_dir):
    _write_notebook(lab.root)
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    try:
        page.goto(lab.url("lab/tree/panels.ipynb"), timeout=60_000)
        page.locator(".jp-Notebook").first.wait_for(timeout=60_000)
        _wait_kernel_idle(page)
        _run_all(page)
        latencies = {}
        for name in CELLS:
            panel = page.locator(f".mlpl-panel-{name}").first
            panel.wait_for(state="attached", timeout=180_000)  # windowing is off: every cell renders
            panel.scroll_into_view_if_needed(timeout=30_000)
            img = panel.locator(".widget-output img").first
            img.wait_for(timeout=120_000)
            sliders = panel.locator(".widget-slider")
            assert sliders.count() >= 1, name
            for i in range(sliders.count()):
                slider = sliders.nth(i)
                label = slider.locator("label").first.inner_text()
                covered = _readout_covered(page, slider.locator(".widget-readout"))
                assert covered is None, f"{name}: the value of slider {label!r} is hidden ({covered})"
            panel.screenshot(path=str(out_dir / f"{name}_before.png"))
            slider = sliders.filter(has=page.locator("label", has_text=MOVED[name])).first
            readout = slider.locator(".widget-readout")
            line = panel.locator(".widget-html").last
            handle = slider.locator(".noUi-handle")
            times = []
            for _ in range(MOVES):
                src, value, text = img.get_attribute("src"), readout.inner_text(), line.inner_text()
                handle.focus()
                t0 = time.perf_counter()
                page.keyboard.press("ArrowRight")
                deadline = time.time() + 30
                while img.get_attribute("src") == src and time.time() < deadline:
                    time.sleep(0.01)
                times.append(time.perf_counter() - t0)
                assert img.get_attribute("src") != src, f"{name}: the plot did not change after ArrowRight"
                new_value = readout.inner_text()
                assert new_value != value, f"{name}: the slider's readout did not move"
                deadline = time.time() + 10
                while line.inner_text() == text and time.time() < deadline:
                    time.sleep(0.01)
                assert line.inner_text() != text, f"{name}: the panel's readout line did not change"
            # the readout line reports the slider's current value
            shown = float(readout.inner_text())
            nums = _numbers(line.inner_text())
            assert any(abs(x - shown) <= 0.006 * max(1.0, abs(shown)) or abs(10 ** shown - x) <= 0.006 * max(1.0, abs(x))
                       for x in nums), f"{name}: readout line {line.inner_text()!r} does not show {shown}"
            panel.screenshot(path=str(out_dir / f"{name}_after.png"))
            latencies[name] = statistics.median(times)
        print("\npanel update latency (key press -> new plot, median of "
              f"{MOVES} moves): " + ", ".join(f"{k} {v:.2f} s" for k, v in latencies.items()))
        print(f"screenshots: {out_dir}")
    finally:
        page.close()
