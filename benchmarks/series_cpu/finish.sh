#!/usr/bin/env bash
# After the series has run to its end (its report executed every notebook into $STORE/reports):
# on main with the design merged (`git merge --ff-only series-cpu` after rebasing it on main),
# everything issues 51/52 regenerate from the one series — timings and expected ranges, the series
# breakdown, the shipped pack, the pack-served report from an empty store (the cpu-pack timings:
# what `make report` costs a student), the README's times, the handbook's results block and the
# cpu plan-keys fixture. Leave this folder for later submissions (README: a submission's diffs
# stay under 256 MiB; its deletion alone is 229 MiB).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/series.env"
cd "$ROOT"
lab=.venv/bin/mlpl-lab
export MLPL_LAB_DATA="$STORE" MPLBACKEND=Agg
if [ -d "$STORE/superseded" ]; then
    # runs made again for the observed epoch's test score (rescore.py): each must equal the run it
    # replaced; the series' timings and breakdown stay those of the cold series (made 2026-11-27/28)
    STORE="$STORE" .venv/bin/python "$here/rescore.py" --check
else
    $lab course timings --executed "$STORE/reports" --store "$STORE/runs" --workers 2
    .venv/bin/python benchmarks/bench_series.py --breakdown --profile cpu --store "$STORE/runs"
fi
$lab pack export data/packs/cpu-course.mlplpack --profile cpu --name "cpu-$(date +%F)"
# 02's live run takes GR's setting from the pack's tuning: measured again on the pack just made
# (bench_live.py imports it into a temporary store, as a student's notebook does)
(unset MLPL_LAB_DATA; .venv/bin/python benchmarks/bench_live.py --chapters 02)
fresh="$(mktemp -d)"
MLPL_LAB_DATA="$fresh" $lab report --profile cpu --out "$fresh/reports"
MLPL_LAB_DATA="$fresh" $lab course timings --executed "$fresh/reports"
$lab course sync
$lab course results --executed "$STORE/reports"
unset MLPL_LAB_DATA
.venv/bin/python tests/plan_keys.py --write --profile cpu
echo "done: check 07 in $fresh/reports (>= 18 single-positive methods, the 10 x 3 block, Friedman's p,"
echo "the critical-difference diagram, clean vs observed validation) and every chapter's claims"
