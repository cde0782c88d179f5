"""The repository holds source and the shipped pack's parts, not runs: no tracked file over 8 MiB,
the history grows by new runs only (no part or run list is ever committed twice; the pack index
lists parts, not runs), and what the history gained since the pack became parts stays under 60 MiB
as git stores it (what a clone downloads). Oracle for the measurement: a repository built here
whose added blobs are known by hand."""
from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from mlpl_lab.course.readme_times import HISTORY_BASE, blobs_added

ROOT = Path(__file__).resolve().parents[1]
MIB = 2 ** 20


def git(root, *args):
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=True).stdout


def tracked(root=ROOT):
    try:
        return [f for f in git(root, "ls-files", "-z").split("\0") if f]
    except (subprocess.CalledProcessError, FileNotFoundError):
        pytest.skip("not a git checkout")


def test_no_tracked_file_is_over_8_mib():
    big = [(f, (ROOT / f).stat().st_size) for f in tracked() if (ROOT / f).is_file()
           and (ROOT / f).stat().st_size > 8 * MIB]
    assert not big, f"tracked files over 8 MiB (every version stays in every clone's history): {big}"


def test_the_tracked_tree_is_under_41_mib():
    """The tree a lent GPU receives with the check's kit (64 MiB in all) has a goal of 40 MiB: the
    tracked files, summed as the before-stop check sums them, stay under 41 MiB. A new part that
    would pass it needs room made first (or a decision on what the pack carries)."""
    files = [ROOT / f for f in tracked()]
    total = sum(p.stat().st_size for p in files if p.is_file())
    assert total < 41 * MIB, f"the tracked tree is {total / MIB:.2f} MiB (goal: 40 MiB, under 41)"


def test_the_history_grew_by_at_most_60_mib_since_the_pack_became_parts():
    """Counted as git stores the blobs (``objectsize:disk``: compressed, text stored as deltas),
    which is what a clone downloads. The xz parts store at their full size; a text file edited
    again (the changelog, the handbook) stores as its change. Their raw sizes, summed, are twice
    that (each version counted whole) and are not what anyone pays."""
    tracked()
    added = blobs_added(ROOT)
    if added is None:
        pytest.skip(f"{HISTORY_BASE} is not in this clone (shallow)")
    assert added["disk_bytes"] <= 60 * MIB, added


def test_no_part_and_no_run_list_is_ever_committed_twice():
    """A part (and the run list beside it) is written once and never edited: a commit may add one
    or delete one, never change one in place. Bug caught: an exporter that rewrites a kept part
    (a time stamp, another order) or appends to a run list, committing unchanged runs again."""
    tracked()
    if subprocess.run(["git", "-C", str(ROOT), "cat-file", "-e", f"{HISTORY_BASE}^{{commit}}"]).returncode:
        pytest.skip(f"{HISTORY_BASE} is not in this clone (shallow)")
    edited = git(ROOT, "log", "--format=", "--name-only", "--diff-filter=MR", f"{HISTORY_BASE}..HEAD", "--",
                 "data/packs/cpu-course/parts").split()
    assert not edited, f"parts edited in place (each version stays in every clone's history): {sorted(set(edited))}"


def test_blobs_added_counts_every_new_file_version_by_hand(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q")
    git(repo, "config", "user.email", "t@t")
    git(repo, "config", "user.name", "t")
    (repo / "a.txt").write_text("a" * 1000)
    git(repo, "add", "a.txt")
    git(repo, "commit", "-qm", "base")
    base = git(repo, "rev-parse", "HEAD").strip()
    (repo / "b.bin").write_bytes(b"b" * 300)
    git(repo, "add", "b.bin")
    git(repo, "commit", "-qm", "one")
    (repo / "a.txt").write_text("a" * 1000 + "z" * 50)  # a new version of a: 1,050 bytes
    (repo / "b.bin").unlink()  # a deletion adds no blob
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "two")
    got = blobs_added(repo, base)
    assert (got["blobs"], got["bytes"]) == (2, 300 + 1050)
    assert blobs_added(repo, "0" * 40) is None
