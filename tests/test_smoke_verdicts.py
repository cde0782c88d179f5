"""Two seeds decide nothing: the smoke series (seeds 0 and 1) calls no claim *holds* or *does not
hold* in any notebook. Bug caught: a verdict rule that decides from fewer than three paired seeds
(a borrowed spread, a zero-width interval, a one-sided test), or a chapter that gives one of its
claims more seeds than the profile has."""
from __future__ import annotations

import pytest

from mlpl_lab.profiles import get_profile

NOTEBOOKS = ("01_assume_negative.ipynb", "02_gr_loss.ipynb", "03_opml.ipynb", "04_cls.ipynb",
             "05_lac.ipynb", "06_pu_mlc.ipynb", "07_benchmark.ipynb")


def test_smoke_has_two_seeds():
    assert list(get_profile("smoke").seeds) == [0, 1]


@pytest.mark.notebook
@pytest.mark.parametrize("name", NOTEBOOKS)
def test_smoke_series_decides_nothing(executed_notebooks, name):
    rec = executed_notebooks(name)
    claims = {k: v for key, value in rec.items() if "claims" in key and isinstance(value, dict)
              for k, v in value.items() if isinstance(v, dict) and "verdict" in v}
    assert claims, f"{name} records no claim"
    for label, claim in claims.items():
        assert claim["verdict"].startswith("inconclusive"), (name, label, claim["verdict"])
        assert claim.get("n", 0) <= 2, (name, label, claim.get("n"))
