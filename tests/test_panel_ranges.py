"""A value passed in code outside a panel slider's range is a ValueError naming the range, for
every panel (ipywidgets clamps silently: ``GRPanel(q2=5)`` used to show q2 = 1). The ranges are
the ones each panel's docstring and sliders state, written here by hand."""
from __future__ import annotations

import os

os.environ.setdefault("MPLBACKEND", "Agg")

import pytest  # noqa: E402
import torch  # noqa: E402

from mlpl_lab.viz.cls_panel import CLSPanel  # noqa: E402
from mlpl_lab.viz.gr_panel import GRPanel  # noqa: E402
from mlpl_lab.viz.lac_panel import LACPanel  # noqa: E402
from mlpl_lab.viz.opml_panel import OPMLPanel  # noqa: E402
from mlpl_lab.viz.pu_panel import PUPanel  # noqa: E402

PU = {"logits": torch.zeros(4, 3), "observed": torch.tensor([[1, -1, -1]] * 4)}

CASES = [
    (lambda: GRPanel(q2=5), "GRPanel", "q2 = 5", "[0.001, 1]"),
    (lambda: GRPanel(b_T=3.0), "GRPanel", "b_T = 3.0", "[-12, 2]"),
    (lambda: OPMLPanel(a=4.0, show=False), "OPMLPanel", "a = 4.0", "[-3, 3]"),
    (lambda: OPMLPanel(log10_lambda=-7, show=False), "OPMLPanel", "log10_lambda = -7", "[-5.5, -1]"),
    (lambda: OPMLPanel(n_unknown=41, show=False), "OPMLPanel", "n_unknown = 41", "[1, 40]"),
    (lambda: CLSPanel(tau_h=0.2), "CLSPanel", "tau_h = 0.2", "[0, 0.15]"),
    (lambda: CLSPanel(tau_l=0.5), "CLSPanel", "tau_l = 0.5", "[0, 0.3]"),
    (lambda: LACPanel(None, None, delta=0.3), "LACPanel", "delta = 0.3", "[0.5, 0.99]"),
    (lambda: PUPanel(**PU, gamma=2.5), "PUPanel", "gamma = 2.5", "[0, 2]"),
    (lambda: PUPanel(**PU, alpha=20.0), "PUPanel", "alpha = 20.0", "[0.1, 10]"),
]


@pytest.mark.parametrize("make, panel, value, bounds", CASES, ids=[c[2] for c in CASES])
def test_out_of_range_is_an_error_naming_the_range(make, panel, value, bounds):
    with pytest.raises(ValueError) as err:
        make()
    msg = str(err.value)
    assert msg.startswith(panel) and value in msg and f"range {bounds}" in msg, msg


def test_values_at_the_edges_of_the_ranges_are_accepted():
    """The bounds themselves are in range (a check that is off by one step would fail here)."""
    assert GRPanel(q2=1.0, q3=0.01, w_T=20.0, b_T=-12.0, epoch=0).sliders["q2"].value == pytest.approx(1.0)
    assert OPMLPanel(a=-3.0, b=3.0, log10_lambda=-5.5, n_unknown=40, grid=[-1.0, 1.0], show=False).a.value == -3.0
    assert CLSPanel(tau_h=0.15, tau_l=0.0).sliders["tau_h"].value == pytest.approx(0.15)
    assert PUPanel(**PU, alpha=0.1, gamma=2.0).gamma.value == 2.0
    assert PUPanel(**PU, alpha=None).alpha.value == pytest.approx(-1.05)  # no temperature
