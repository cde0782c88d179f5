#!/usr/bin/env bash
# A stand-in for the GPU image (issue 49): a fresh Python 3.12 venv holding torch 2.11 and
# torchvision 0.26 and the image's other packages, all from the registry by package name, and
# nothing of the lab's own dependencies. `check.sh --rehearse` installs the kit into it with
# --no-index only, exactly as on the GPU. Reused while its stamp is newer than this script.
#
# Usage: benchmarks/gpu/image_venv.sh [VENV]   (default .gpu-image-venv; PY312=... picks the interpreter)
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV=${1:-.gpu-image-venv}
HERE=benchmarks/gpu/image_venv.sh
STAMP=$VENV/.image-installed
if [[ -f $STAMP && $STAMP -nt $HERE ]]; then echo "$VENV: up to date"; exit 0; fi
PY312=${PY312:-$(benchmarks/gpu/python312.sh)}
rm -rf "$VENV"
"$PY312" -m venv "$VENV"
# the image's pair (there +cu130; the registry's default build here: the CPU runs it the same)
"$VENV/bin/python" -m pip install -q torch==2.11.0 torchvision==0.26.0
# the image's other packages (the issue's list)
"$VENV/bin/python" -m pip install -q torch==2.11.0 torchvision==0.26.0 \
    matplotlib seaborn pandas scipy scikit-learn torchmetrics opencv-python-headless pillow tqdm \
    pyyaml pytest pytest-xdist pytest-timeout hypothesis
"$VENV/bin/python" -m pip freeze > "$VENV/image-freeze.txt"
touch "$STAMP"
echo "$VENV: $("$VENV/bin/python" -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__)')"
