"""The size of the environment ``make setup`` builds, for the README (``mlpl-lab course sync``).

``python benchmarks/bench_setup_size.py [--venv .venv]``; the CPU build
(``make setup VENV=.venv-cpu TORCH=cpu``): ``--venv .venv-cpu --out benchmarks/records/setup_env_cpu.json``

Measures the folder on disk as ``du`` does (allocated bytes of every file, each hard link once),
and the part of it that is NVIDIA's CUDA libraries (``site-packages/nvidia``, which a CPU-only
machine never loads), with the torch pair installed. Writes ``benchmarks/records/setup_env.json``.
"""
from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def disk_bytes(folder: Path) -> int:
    """Allocated bytes under ``folder`` (``du -s --block-size=1``: what the disk loses)."""
    out = subprocess.run(["du", "-s", "--block-size=1", str(folder)], capture_output=True, text=True, check=True)
    return int(out.stdout.split()[0])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--venv", default=str(ROOT / ".venv"))
    ap.add_argument("--out", default=str(ROOT / "benchmarks" / "records" / "setup_env.json"))
    args = ap.parse_args(argv)
    venv = Path(args.venv)
    py = venv / "bin" / "python"
    if not py.exists():
        raise SystemExit(f"no environment at {venv}: run `make setup` first")
    probe = subprocess.run([str(py), "-c", "import sys, torch, torchvision, sysconfig; print(sys.version.split()[0]); "
                            "print(torch.__version__); print(torchvision.__version__); "
                            "print(sysconfig.get_paths()['purelib'])"], capture_output=True, text=True)
    if probe.returncode != 0:  # e.g. a CPU torch beside a CUDA-built torchvision: record why
        versions = subprocess.run([str(py), "-m", "pip", "list", "--format", "json"], capture_output=True,
                                  text=True, check=True)
        have = {d["name"]: d["version"] for d in json.loads(versions.stdout)}
        record = {"what": "the environment `make setup` builds (du of the venv)", "venv": venv.name,
                  "bytes": disk_bytes(venv), "torch": have.get("torch"), "torchvision": have.get("torchvision"),
                  "works": False, "error": probe.stderr.strip().splitlines()[-1],
                  "machine": platform.machine(), "date": time.strftime("%Y-%m-%d", time.gmtime())}
        Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
        print(f"{venv}: torch and torchvision do not import together ({record['error']}); wrote {args.out}")
        return 1
    python, torch_v, tv_v, site = probe.stdout.split("\n")[:4]
    nvidia = Path(site) / "nvidia"
    record = {"what": "the environment `make setup` builds (du of the venv)", "venv": venv.name,
              "bytes": disk_bytes(venv), "nvidia_bytes": disk_bytes(nvidia) if nvidia.is_dir() else 0,
              "python": python, "torch": torch_v, "torchvision": tv_v, "works": True, "machine": platform.machine(),
              "date": time.strftime("%Y-%m-%d", time.gmtime())}
    Path(args.out).write_text(json.dumps(record, indent=1) + "\n")
    print(f"{venv}: {record['bytes'] / 1e9:.1f} GB, of which NVIDIA libraries {record['nvidia_bytes'] / 1e9:.1f} GB "
          f"(torch {torch_v}); wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
