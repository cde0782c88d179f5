"""Speed of the embedded scene generator and its cache (not a test; prints numbers).

    python benchmarks/bench_scenes.py [--quick]

Prints images/s (wall clock, and CPU seconds used by the process, which shows whether
more than one core was busy) for 32 px shape scenes (n=20,000), 64 px shapes, 32 px
digits, and the time to save and load a 20,000-image set with the parameter-keyed cache.
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))

import torch  # noqa: E402

from mlpl_lab.data import make_scenes  # noqa: E402


def timed(fn):
    w0, c0 = time.perf_counter(), time.process_time()
    out = fn()
    return out, time.perf_counter() - w0, time.process_time() - c0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller n (smoke run)")
    args = ap.parse_args()
    scale = 10 if args.quick else 1
    print(f"torch {torch.__version__}, torch threads {torch.get_num_threads()}, cpus {os.cpu_count()}")
    make_scenes(64, seed=0)  # warm-up: imports, shape templates
    make_scenes(64, seed=0, glyphs="digits")  # loads sklearn's digits once
    cases = [
        ("shapes 32 px", dict(n=20000 // scale, image_size=32)),
        ("shapes 64 px", dict(n=5000 // scale, image_size=64)),
        ("shapes 96 px", dict(n=2000 // scale, image_size=96)),
        ("digits 32 px", dict(n=5000 // scale, image_size=32, glyphs="digits")),
        ("digits 64 px", dict(n=2000 // scale, image_size=64, glyphs="digits")),
    ]
    print(f"{'case':<14} {'n':>6} {'wall s':>8} {'img/s':>9} {'cpu s':>7}")
    for name, kw in cases:
        s, wall, cpu = timed(lambda: make_scenes(seed=1, **kw))
        print(f"{name:<14} {len(s):>6} {wall:>8.3f} {len(s) / wall:>9.0f} {cpu:>7.3f}")
    with tempfile.TemporaryDirectory() as d:
        n = 20000 // scale
        a, w_gen, _ = timed(lambda: make_scenes(n, seed=2, cache_dir=d))
        size_mb = os.path.getsize(a.cache_path) / 2**20
        b, w_load, _ = timed(lambda: make_scenes(n, seed=2, cache_dir=d))
        assert b.from_cache and torch.equal(a.images, b.images)
        print(f"cache, shapes 32 px n={n}: generate+save {w_gen:.3f} s, load {w_load:.3f} s "
              f"({size_mb:.1f} MiB file)")


if __name__ == "__main__":
    main()
