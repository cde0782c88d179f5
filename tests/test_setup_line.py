"""The README's environment line (issue 51): generated from the setup records, the CPU build's
included whether it works or not (hand-made records; the expected text written out here)."""
from mlpl_lab.course.readme_times import setup_line

GIB = 2 ** 30
FULL = {"bytes": 6.5 * GIB, "nvidia_bytes": 3.1 * GIB, "torch": "2.14.1+cu130", "date": "2026-11-27"}


def test_the_line_states_the_cpu_build_it_measured():
    assert setup_line(FULL).endswith("(`benchmarks/records/setup_env.json`).")
    ok = {"bytes": 2.0 * GIB, "torch": "2.14.1+cpu", "works": True}
    assert "a CPU build (`make setup TORCH=cpu`, torch 2.14.1+cpu): **2.0 GiB**" in setup_line(FULL, ok)
    broken = {"bytes": 2.0 * GIB, "torch": "2.13.0+cpu", "torchvision": "0.28.0", "works": False}
    text = setup_line(FULL, broken)
    assert "here torch 2.13.0+cpu (2.0 GiB) left torchvision 0.28.0 unable to import" in text
    assert "**2.0 GiB**" not in text  # a build that does not import is not offered as a size
