"""The claim families each design declares, recorded in the shipped pack's index before any result
is read: ``{notebook: {family: {"m", "members_sha"}}}`` (``pack.json``'s ``families`` block).

A family's members (its claim ids) or its m changing while the runs stay is a change of the
question after the data: the test compares the designs of this code with the block the shipped
pack recorded, and says how to refresh the record on purpose."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from mlpl_lab.commands.arguments import notebook_paths
from mlpl_lab.protocol.plan import designed_families, members_sha

PACK = Path(__file__).resolve().parents[1] / "data" / "packs" / "cpu-course" / "pack.json"
REFRESH = ("MLPL_LAB_DATA=<a store holding the pack, its notebooks run by `mlpl-lab report --profile cpu`> "
           "mlpl-lab pack export data/packs/cpu-course --profile cpu --name <the index's name>")


def differences(designed, stored):
    """Every family whose m or members differ between two families blocks, in words (a naive
    walk over both, no helper of the code)."""
    out = []
    for nb in sorted(set(designed) | set(stored)):
        d, s = designed.get(nb, {}), stored.get(nb, {})
        for fam in sorted(set(d) | set(s)):
            if fam not in s:
                out.append(f"{nb}: {fam!r} is declared now but was not recorded")
            elif fam not in d:
                out.append(f"{nb}: {fam!r} was recorded but is no longer declared")
            elif d[fam] != s[fam]:
                what = [k for k in ("m", "members_sha") if d[fam].get(k) != s[fam].get(k)]
                out.append(f"{nb}: {fam!r}: {' and '.join(what)} changed ({s[fam]} recorded, {d[fam]} now)")
    return out


def test_members_sha_is_the_sha256_of_the_sorted_ids_one_per_line():
    # by hand: sorted("b", "a") = a, b -> "a\nb"
    assert members_sha(["b", "a"]) == hashlib.sha256(b"a\nb").hexdigest()
    assert members_sha(["a", "b"]) == members_sha(("b", "a"))


def test_the_designs_families_are_the_ones_the_shipped_pack_recorded():
    """Fails when a designed family's members or m changed while the pack's runs stay (or the
    block is missing). A deliberate change of a design (a family merged or split, a claim added)
    is refreshed by re-exporting the pack's index, which rewrites pack.json only (every part keeps
    its bytes), and the commit says why."""
    index = json.loads(PACK.read_text())
    assert "families" in index, f"{PACK} records no families block: export it with {REFRESH}"
    diff = differences(designed_families("cpu", notebook_paths(None)), index["families"])
    assert not diff, ("the designs' claim families differ from those recorded in the shipped pack "
                      "before its results:\n  " + "\n  ".join(diff)
                      + "\nIf the change is deliberate (a design's families changed on purpose), refresh the "
                        f"record: {REFRESH}; only pack.json changes. Say in the commit why the question "
                        "changed: the record is there so a family is never redrawn after its results are read.")


def test_a_family_whose_members_change_while_its_runs_stay_is_caught(monkeypatch):
    """The comparison above on a made-up change: 02's ablation family asked over one row fewer
    (same runs, another question) differs from the record in its members."""
    from mlpl_lab.chapters import gr

    index = json.loads(PACK.read_text())
    original = gr.GRDesign.family_members.fget

    def fewer(self):
        out = dict(original(self))
        out[gr.ABLATION] = out[gr.ABLATION][:-1]
        return out

    monkeypatch.setattr(gr.GRDesign, "family_members", property(fewer))
    diff = differences(designed_families("cpu", notebook_paths(["02"])), {"02_gr_loss": index["families"]["02_gr_loss"]})
    assert len(diff) == 1 and diff[0].startswith(f"02_gr_loss: {gr.ABLATION!r}: members_sha changed")


@pytest.mark.parametrize("stem", ["01_assume_negative", "02_gr_loss", "03_opml", "04_cls", "07_benchmark"])
def test_a_design_declares_m_members_per_family(stem):
    """Each family's declared members count its m (the Bonferroni divisor): a family asked over
    more claims than m, or fewer, would be decided at the wrong level."""
    from mlpl_lab.protocol.plan import chapter_design, notebook_parameters

    path = notebook_paths([stem])[0]
    _, design = chapter_design("cpu", stem, notebook_parameters(path) | {"profile": "cpu"})
    members = design.family_members
    assert set(members) == set(design.families)
    for name, fam in design.families.items():
        assert len(set(members[name])) == len(members[name]) == fam.size, name
