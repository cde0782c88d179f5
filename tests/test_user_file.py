"""A researcher's method file (``mlpl-lab benchmark --add FILE``): every bad file is refused
before anything is written, with a message naming its problem and the fix; a good one keys its
runs by content and builds in any process from its kept copy.

The oracles are written by hand: each bad file and the words of its message, the shipped
loss's value on a two-entry batch worked out with softplus, the content hash from hashlib."""
from __future__ import annotations

import hashlib
import math
import textwrap
from pathlib import Path

import pytest
import torch

from mlpl_lab.protocol.user_row import reserved_labels
from mlpl_lab.methods.registry import build_method
from mlpl_lab.methods.user_checks import check_user_file
from mlpl_lab.methods.user_file import UserFileError

ROOT = Path(__file__).resolve().parent.parent
EXAMPLES = ROOT / "notebooks" / "examples"

GOOD_LOSS = '''
import torch.nn.functional as F
LABEL = "mine"
GRID = {"eps": [0.05, 0.1]}
def loss(logits, observed, eps=0.05):
    return F.binary_cross_entropy_with_logits(logits, (observed == 1).float() + eps * (observed == -1).float())
'''

METHOD_HEAD = '''
import torch
import torch.nn.functional as F
from mlpl_lab.methods.base import Method
LABEL = "mine"
'''

BAD = {
    "no label": (GOOD_LOSS.replace('LABEL = "mine"', ""), "has no LABEL"),
    "label not text": (GOOD_LOSS.replace('LABEL = "mine"', "LABEL = 3"), "LABEL is 3, not a text"),
    "label of a course row": (GOOD_LOSS.replace('"mine"', '"AN"'), "is the course row 'AN''s name"),
    "label of a registered name": (GOOD_LOSS.replace('"mine"', '"em_apl"'), "is the course row 'EM+APL''s name"),
    "loss not callable": ('LABEL = "mine"\nloss = 3\n', "loss is a int, not a function"),
    "one argument": ('LABEL = "mine"\ndef loss(logits):\n    return logits.mean()\n',
                     "loss takes (logits), not (logits, observed, ...)"),
    "both forms": (METHOD_HEAD + "class M(Method):\n    def training_step(self, b, e):\n        pass\n"
                   "METHOD = M\ndef loss(logits, observed):\n    return logits.mean()\n",
                   "defines both loss and METHOD"),
    "neither form": ('LABEL = "mine"\n', "defines neither loss nor METHOD"),
    "grid key not a keyword": (GOOD_LOSS.replace('{"eps": [0.05, 0.1]}', '{"alpha": [1, 2]}'),
                               "GRID key 'alpha' is not a keyword of loss (it takes eps)"),
    "grid tunes the epoch": (GOOD_LOSS.replace('{"eps": [0.05, 0.1]}', '{"epoch": [1, 2]}'),
                             "the training loop passes epoch itself"),
    "grid not a dict": (GOOD_LOSS.replace('{"eps": [0.05, 0.1]}', '[0.05, 0.1]'), "GRID is a list"),
    "grid empty list": (GOOD_LOSS.replace('[0.05, 0.1]', '[]'), "give a non-empty list of values"),
    "grid default not first": (GOOD_LOSS.replace('[0.05, 0.1]', '[0.1, 0.05]'),
                               "starts with 0.1 but loss declares eps=0.05; put the default first"),
    "grid value not a literal": (GOOD_LOSS.replace('[0.05, 0.1]', '[0.05, None]'), "GRID['eps'] holds None"),
    "grid value twice": (GOOD_LOSS.replace('[0.05, 0.1]', '[0.05, 0.05]'), "lists a value twice"),
    "keyword without a default": ('LABEL = "mine"\ndef loss(logits, observed, eps):\n    return logits.mean()\n',
                                  "without a default and GRID does not set them"),
    "syntax error": ('LABEL = "mine"\ndef loss(logits, observed)\n    return 0\n', "line 2:"),
    "import raises": ('LABEL = "mine"\nimport not_a_module_anywhere\n', "importing it raised ModuleNotFoundError at line 2"),
    "not finite": ('LABEL = "mine"\ndef loss(logits, observed):\n    return (logits * 0).sum() / 0\n',
                   "loss returned nan on a tiny batch"),
    "not a scalar": ('LABEL = "mine"\ndef loss(logits, observed):\n    return logits.mean(0)\n',
                     "loss returned a tensor of shape (5,), not a scalar"),
    "not a tensor": ('LABEL = "mine"\ndef loss(logits, observed):\n    return 0.5\n',
                     "loss returned a float, not a torch tensor"),
    "no gradient": ('import torch\nLABEL = "mine"\ndef loss(logits, observed):\n    return torch.tensor(1.0)\n',
                    "no gradient (it does not depend on the logits)"),
    "raises at a grid point": ('LABEL = "mine"\nGRID = {"k": [1, 2]}\ndef loss(logits, observed, k=1):\n'
                               '    assert k == 1, "k must be 1"\n    return logits.mean()\n',
                               "loss raised AssertionError at GRID point {'k': 2}"),
    "changes observed": ('LABEL = "mine"\ndef loss(logits, observed):\n    observed[observed == -1] = 0\n'
                         '    return logits.mean()\n', "loss changed observed in place"),
    "method not a subclass": ('LABEL = "mine"\nclass M:\n    pass\nMETHOD = M\n',
                              "METHOD is <class 'mlpl_lab_user_"),
    "method without a step": (METHOD_HEAD + "class M(Method):\n    pass\nMETHOD = M\n",
                              "M does not override training_step"),
    "method step raises": (METHOD_HEAD + "class M(Method):\n    def training_step(self, batch, epoch):\n"
                           "        return self.net(batch['nope']).mean(), {}\nMETHOD = M\n",
                           "M raised KeyError in training_step(batch, 0)"),
    "method step not a pair": (METHOD_HEAD + "class M(Method):\n    def training_step(self, batch, epoch):\n"
                               "        return self.net(batch['image']).mean()\nMETHOD = M\n",
                               "M.training_step returned Tensor; return (loss, logs)"),
    "method grid not a keyword": (METHOD_HEAD + "class M(Method):\n    GRID = {'alpha': [1]}\n"
                                  "    def training_step(self, batch, epoch):\n"
                                  "        return self.net(batch['image']).mean(), {}\nMETHOD = M\n",
                                  "GRID key 'alpha' is not a keyword of M.__init__"),
}


@pytest.mark.parametrize("case", list(BAD))
def test_each_bad_file_is_refused_with_its_problem_and_fix(case, tmp_path):
    """Bug caught: a bad method file reaching the training (a crash an hour in, or a NaN row), or
    refused with a message that does not say what to change."""
    text, words = BAD[case]
    path = tmp_path / f"{case.replace(' ', '_')}.py"
    path.write_text(textwrap.dedent(text))
    with pytest.raises(UserFileError) as err:
        check_user_file(path, reserved_labels())
    message = str(err.value)
    assert words in message, message
    assert str(path) in message or path.name in message, message
    assert ";" in message, f"no fix after the problem: {message}"


def test_not_a_py_file_and_no_file(tmp_path):
    (tmp_path / "m.txt").write_text(GOOD_LOSS)
    with pytest.raises(UserFileError, match="not a .py file"):
        check_user_file(tmp_path / "m.txt")
    with pytest.raises(UserFileError, match="no such file"):
        check_user_file(tmp_path / "absent.py")


def test_the_shipped_examples_pass_their_checks():
    """Bug caught: a shipped example the command refuses (the handbook's first step failing)."""
    loss = check_user_file(EXAMPLES / "an_eps.py", reserved_labels())
    assert (loss.kind, loss.label, loss.grid) == ("loss", "AN, unknowns at eps", {"eps": (0.05, 0.1)})
    method = check_user_file(EXAMPLES / "soft_targets.py", reserved_labels())
    assert (method.kind, method.label, method.grid) == ("method", "AN, unknowns follow the model",
                                                        {"momentum": (0.9, 0.99)})
    assert method.points(3) == [{"momentum": 0.9}, {"momentum": 0.99}]


def test_grid_points_walk_the_product_in_order_up_to_the_budget(tmp_path):
    path = tmp_path / "two.py"
    path.write_text('LABEL = "two"\nGRID = {"a": [1, 2], "b": ["x", "y", "z"]}\n'
                    'def loss(logits, observed, a=1, b="x"):\n    return logits.mean() * a\n')
    uf = check_user_file(path)
    assert uf.grid_size() == 6
    assert uf.points(3) == [{"a": 1, "b": "x"}, {"a": 1, "b": "y"}, {"a": 1, "b": "z"}]


@pytest.fixture
def data_root(tmp_path, monkeypatch):
    monkeypatch.setenv("MLPL_LAB_DATA", str(tmp_path / "data"))
    return tmp_path / "data"


def test_the_runs_key_by_content_not_by_path(tmp_path, data_root):
    """Bug caught: an edited file served its old runs (a stale row), or the same file moved
    elsewhere retrained. Oracle: the source is the sha256 of the bytes, computed here."""
    from mlpl_lab.chapters import benchmark as bench
    from mlpl_lab.protocol.user_row import AddedRow

    a, b, c = tmp_path / "a.py", tmp_path / "moved" / "b.py", tmp_path / "c.py"
    b.parent.mkdir()
    a.write_text(GOOD_LOSS)
    b.write_text(GOOD_LOSS)
    c.write_text(GOOD_LOSS + "# edited\n")
    d = bench.design("smoke", regimes=["single"], tuning=True)
    specs = {p.name: AddedRow(d, check_user_file(p)).spec("single positive", 1) for p in (a, b, c)}
    assert specs["a.py"].method_params["source"] == hashlib.sha256(a.read_bytes()).hexdigest()[:20]
    assert specs["a.py"].key == specs["b.py"].key
    assert specs["c.py"].key != specs["a.py"].key
    assert specs["a.py"].method == "user_file" and specs["a.py"].method_params["eps"] == 0.05


def test_the_kept_copy_builds_the_method_and_an_altered_copy_is_refused(tmp_path, data_root):
    """Bug caught: a worker process unable to build the method (the spec names no importable
    file), or one that trains an altered copy under the old runs' key. Oracle: the shipped loss
    on logits (0, 2), observed (1, unknown), eps 0.1, worked out by hand:
    (softplus(0) + 0.1·softplus(-2) + 0.9·softplus(2)) / 2."""
    from mlpl_lab.methods.user_method import keep_source, kept_file, user_methods_dir

    uf = check_user_file(EXAMPLES / "an_eps.py")
    path = keep_source(uf)
    assert path == user_methods_dir() / f"{uf.source}.py" and path.read_bytes() == uf.data
    method = build_method("user_file", source=uf.source, eps=0.1)
    value = float(method.loss_fn(torch.tensor([[0.0, 2.0]]), torch.tensor([[1, -1]]), **method.loss_kwargs(0)))
    sp = lambda x: math.log1p(math.exp(x))  # noqa: E731
    assert value == pytest.approx((sp(0) + 0.1 * sp(-2) + 0.9 * sp(2)) / 2, rel=1e-6)
    with pytest.raises(TypeError, match=r"unknown hyperparameter\(s\) \['alpha'\]"):
        build_method("user_file", source=uf.source, alpha=1.0)

    other = tmp_path / "other.py"
    other.write_text(GOOD_LOSS + "# not kept\n")
    altered = check_user_file(other)
    kept = keep_source(altered)
    kept.write_text(GOOD_LOSS + "# changed after it was added\n")
    with pytest.raises(UserFileError, match="was changed since it was added"):
        kept_file(altered.source)
    with pytest.raises(UserFileError, match="no method file of source 0123456789abcdef0123"):
        kept_file("0123456789abcdef0123")
