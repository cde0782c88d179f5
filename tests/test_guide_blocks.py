"""The instructor guide's generated parts: the session plans (90 minutes and two hours, from the
same parts of course.yml and the measured times every page reads) and the compute options (from
the profiles). Every expected figure is written out by hand here."""
from __future__ import annotations

import pytest

from mlpl_lab.course import guide_blocks as gb
from mlpl_lab.course.notebooks import CourseError


def _course(parts=((20, False), (40, True), (20, False), (10, False))):
    def chapter(stem, title):
        return {"notebook": stem, "title": title,
                "session": [{"minutes": m, "what": f"part {i}", **({"notebook": True} if nb else {})}
                            for i, (m, nb) in enumerate(parts)]}
    return {"session_lengths": [90, 120],
            "chapters": [chapter("00_partial_labels", "00 · The problem: x"), chapter("01_assume_negative", "01 · AN")]}


TIMINGS = {"cpu-pack": {"00_partial_labels": 14.7, "01_assume_negative": 95.0}}


def test_parts_scale_to_two_hours_in_steps_of_five_and_add_up():
    # 20/40/20/10 × 120/90 = 26.7/53.3/26.7/13.3 min: floors 25/50/25/10 (110 min); the 10 left go
    # 5 each to the two largest remainders, 53.3 - 50 = 13.3 - 10 = 3.3 (26.7 - 25 = 1.7)
    assert gb.scaled([20, 40, 20, 10], 120) == [25, 55, 25, 15]
    assert gb.scaled([20, 40, 20, 10], 90) == [20, 40, 20, 10]
    assert sum(gb.scaled([7, 13, 29], 120)) == 120
    with pytest.raises(CourseError, match="multiple of 5"):
        gb.scaled([20, 40], 92)


def test_the_plans_name_each_notebook_part_s_measured_machine_time():
    text = gb.sessions_markdown(_course(), TIMINGS, {"01_assume_negative": 150.0}, ["01"])
    assert text.startswith(gb.SESSIONS_BEGIN) and text.endswith(gb.SESSIONS_END)
    assert "## Two sessions of 90 minutes" in text and "## Two sessions of two hours" in text
    assert "| session | chapter | 0–20 min | 20–60 min | 60–80 min | 80–90 min |" in text
    assert "| session | chapter | 0–25 min | 25–80 min | 80–105 min | 105–120 min |" in text
    # 14.7 s and 95 s as every page says them (seconds below 90 s, else minutes); 00 has no live exercise
    assert "| 1 | 00 · The problem | part 0 | part 1 (from the pack 15 s) | part 2 | part 3 |" in text
    assert "| 2 | 01 · AN | part 0 | part 1 (from the pack 1.6 min; live run 2.5 min) | part 2 | part 3 |" in text
    missing = gb.sessions_markdown(_course(), {}, {}, ["01"])
    assert "(from the pack not yet measured; live run not yet measured)" in missing


def test_a_notebook_part_shorter_than_its_machine_time_or_a_malformed_session_is_refused():
    slow = {"cpu-pack": {"00_partial_labels": 41 * 60.0}}  # 41 min in a 40-minute part
    with pytest.raises(CourseError, match="shorter than the 41.0 min"):
        gb.sessions_markdown(_course(), slow, {}, [])
    with pytest.raises(CourseError, match="exactly one session part"):
        gb.sessions_markdown(_course(((45, False), (45, False))), TIMINGS, {}, [])
    uneven = _course()
    uneven["chapters"][1]["session"][0]["minutes"] = 30
    with pytest.raises(CourseError, match="add up to the same length"):
        gb.sessions_markdown(uneven, TIMINGS, {}, [])


def test_the_compute_options_say_what_each_profile_trains():
    """Bug caught: the guide said the gpu profile trains on "20,000 training images, more epochs"
    where it trains on 8,000 for 10 epochs (20,000 is its pretraining run). Written out by hand from
    mlpl_lab/profiles.py and chapter 05's gpu design."""
    text = gb.profiles_markdown({})
    gpu = next(line for line in text.splitlines() if line.startswith("* **gpu**"))
    assert "ResNet-18 at 64 px, 8,000 training images (2,000 validation, 4,000 test), 10 epochs" in gpu
    assert "five seeds (0–4), bfloat16 mixed precision" in gpu and "two stages at 128 px" in gpu
    assert "pretrained on 20,000 single-object scenes of the digit glyphs for 8 epochs" in gpu
    assert "more epochs" not in text and "20,000 training images" not in text
    assert "not yet measured" in gpu and "measured minutes" in gb.profiles_markdown({"gpu": {"00": 1.0}})
    cpu = next(line for line in text.splitlines() if line.startswith("* **cpu laptop**"))
    assert "the small CNN (width 16) at 32 px, 4,000 training images" in cpu and "54 epochs" in cpu
    assert "vPU / PU-MLC rows 128 epochs" in cpu and "28 + 12 epochs" in cpu


def test_the_guide_holds_the_current_blocks():
    """What `mlpl-lab course sync --check` checks: the guide's generated parts are what the records
    and course.yml give now."""
    assert gb.sync_blocks(write=False) == [], "run `mlpl-lab course sync`"
