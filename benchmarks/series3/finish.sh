#!/usr/bin/env bash
# After the series has run to its end (its report executed every notebook into $STORE/reports),
# on main with the staging revert reverted (the design is main's code again): everything issue 36
# regenerates from the one series — timings and expected ranges, the series breakdown, the shipped
# pack, the pack-served report from an empty store (the cpu-pack timings: what `make report` costs
# a student), the README's times and the handbook's results block.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"; root="$(cd "$here/../.." && pwd)"
source "$here/series.env"
cd "$root"
lab=.venv/bin/mlpl-lab
export MLPL_LAB_DATA="$STORE" MPLBACKEND=Agg
$lab course timings --executed "$STORE/reports" --store "$STORE/runs" --workers 2
.venv/bin/python benchmarks/bench_series.py --breakdown --profile cpu --store "$STORE/runs"
$lab pack export data/packs/cpu-course.mlplpack --profile cpu --name "cpu-$(date +%F)"
fresh="$(mktemp -d)"
MLPL_LAB_DATA="$fresh" $lab report --profile cpu --out "$fresh/reports"
MLPL_LAB_DATA="$fresh" $lab course timings --executed "$fresh/reports"
$lab course sync
$lab course results --executed "$STORE/reports"
echo "done: check notebook 01's scene targets and every chapter's claims in $STORE/reports"
