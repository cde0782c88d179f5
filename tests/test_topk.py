"""The one top-k routine against a naive sort with the documented tie rule."""
from __future__ import annotations

import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from mlpl_lab.methods.topk import top_k_mask


def naive(values, cand, k, largest):
    """Rank candidate positions by (value, position) — lower position wins a tie."""
    idx = [i for i, c in enumerate(cand) if c]
    key = (lambda i: (-values[i], i)) if largest else (lambda i: (values[i], i))
    chosen = sorted(idx, key=key)[:max(0, k)]
    return [i in chosen for i in range(len(values))]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(-3, 3), min_size=1, max_size=30), st.data())
def test_flat_selection_matches_the_naive_rule(vals, data):
    cand = data.draw(st.lists(st.booleans(), min_size=len(vals), max_size=len(vals)))
    k = data.draw(st.integers(0, len(vals) + 2))
    largest = data.draw(st.booleans())
    got = top_k_mask(torch.tensor(vals, dtype=torch.float32), k, torch.tensor(cand), largest=largest)
    assert got.tolist() == naive(vals, cand, k, largest)


def test_ties_go_to_the_lower_index_and_columns_rank_alone():
    s = torch.tensor([[1.0, 5.0], [1.0, 5.0], [0.0, 5.0]])
    assert top_k_mask(s, 1, largest=True).tolist() == [[False, True], [False, False], [False, False]]
    cols = top_k_mask(s, torch.tensor([2, 1]), dim=0, largest=True)
    assert cols.tolist() == [[True, True], [True, False], [False, False]]
    with pytest.raises(ValueError, match="NaN"):
        top_k_mask(torch.tensor([float("nan")]), 1)
