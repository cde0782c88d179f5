#!/usr/bin/env bash
# The GPU check (issue 49): everything a short, offline GPU window should do, in one command.
#
#   benchmarks/gpu/check.sh              on a CUDA machine with Python 3.12 and torch preinstalled
#                                        (the GPU image), offline; <= 9 min (540 s) on one GPU
#   benchmarks/gpu/check.sh --rehearse   the same steps on the CPU at CPU sizes (make gpu-rehearse), in the stand-in
#                                        image .gpu-image-venv/ (benchmarks/gpu/image_venv.sh),
#                                        without network (a network namespace of its own)
#
# It needs the kit (`make gpu-kit`: .gpu-kit/, carried with the tree) and installs it into a
# temporary site folder with pip --no-index --no-deps; the tree itself comes first on PYTHONPATH
# (the lab reads its notebooks, packs and records there). Then, each step under its own timeout
# (a hang costs that step only; no step needs another to have succeeded):
#   1 imports     every module the kit brings and every module of the lab import
#   2 tests/gpu   bf16 autocast without a GradScaler, NHWC, the split held on the device
#   3 notebooks   all eight notebooks executed end to end with papermill under the cut (cut.py: the
#                 gpu design at sizes, and a level of seeds and trials, that the GPU records say fit
#                 330 s on one card), the planned runs first on the best recorded workers sharing
#                 the device, then the notebooks side by side; each completed or not, its seconds
#   4 throughput  what is left of the window: the throughput matrix (step_throughput.py): the step
#                 through fit, then the levers: 1/2/4/8 worker processes sharing the device (each with
#                 its own data on it), channels-last, torch.compile, CUDA graphs, a larger batch (lr
#                 scaled): images/s per run and in total for each; the best in "best"
#   5 train_run   one gpu-profile run end to end (pretraining, then AN single positive): time, mAP
#   6 summary     summary.json and a one-screen summary.txt
# Records (at most 8 files): imports.json, throughput.json, notebooks.json, train_run.json,
# steps.tsv, logs.txt (every step's output), summary.json, summary.txt; in $OUT when set, else
# benchmarks/records/gpu/ (rehearsal: .../gpu/rehearsal/).
# GPU_CHECK_DEADLINE (s, default 540 on the GPU, 4200 rehearsing) caps the steps' limits together;
# GPU_CHECK_STEPS (e.g. "throughput notebooks") runs only those steps (install and summary always);
# over a former check's records in $RECORDS (copied there first), the others keep theirs: a rerun.
# GPU_CHECK_LIMIT_<step> (seconds) replaces that step's limit (still capped by the deadline).
set -uo pipefail
cd "$(dirname "$0")/../.."
ROOT=$PWD
MODE=gpu
[[ ${1:-} == --rehearse ]] && MODE=rehearse
KIT=${KIT:-$ROOT/.gpu-kit}
if [[ $MODE == rehearse ]]; then
    # the stand-in image: built from the registry once (network), reused after
    benchmarks/gpu/image_venv.sh .gpu-image-venv || exit 1
    PY=$ROOT/.gpu-image-venv/bin/python
    RECORDS=${OUT:-$ROOT/benchmarks/records/gpu/rehearsal}
    DEADLINE=${GPU_CHECK_DEADLINE:-4200}
    # the rest runs without network, as on the GPU machine (root: a network namespace of its own)
    if [[ -z ${GPU_CHECK_OFFLINE:-} ]] && unshare -n true 2>/dev/null; then
        exec env GPU_CHECK_OFFLINE=netns unshare -n "$0" "$@"
    fi
else
    PY=${PYTHON:-$(command -v python3.12 || command -v python3)}
    RECORDS=${OUT:-$ROOT/benchmarks/records/gpu}
    DEADLINE=${GPU_CHECK_DEADLINE:-540}
fi
[[ -d $KIT ]] || { echo "check.sh: no kit at $KIT (make gpu-kit, then carry .gpu-kit/ with the tree)" >&2; exit 2; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/gpu-check.XXXXXX")
mkdir -p "$RECORDS" "$WORK/logs"
rm -rf "$RECORDS/logs"  # the former layout: one log per step
SITE=$WORK/site
export MLPL_LAB_DATA=$WORK/data MLPL_LAB_PROGRESS=0 PYTHONDONTWRITEBYTECODE=1
export PYTHONPATH=$ROOT:$SITE${PYTHONPATH:+:$PYTHONPATH}
export GPU_CHECK_MODE=$MODE GPU_CHECK_OUT=$RECORDS GPU_CHECK_WORK=$WORK
[[ $MODE == rehearse ]] && export MLPL_LAB_GPU_TEST_DEVICE=cpu
START=$(date +%s)
STEPS=$RECORDS/steps.tsv
FORMER=""
if [[ -n ${GPU_CHECK_STEPS:-} && -f $STEPS ]]; then
    # a partial rerun over a former check's records (copied into $RECORDS first): the steps it does
    # not rerun keep their lines and records; summary.json and summary.txt cover both
    FORMER=$(awk -F'\t' -v s=" $GPU_CHECK_STEPS install summary " 'NR > 1 && index(s, " " $1 " ") == 0' "$STEPS")
    [[ -f $RECORDS/logs.txt ]] && mv "$RECORDS/logs.txt" "$WORK/former-logs.txt"
fi
printf 'step\texit\tseconds\tlimit_s\n' > "$STEPS"
[[ -n $FORMER ]] && printf '%s\n' "$FORMER" >> "$STEPS"

# step NAME LIMIT_S CMD...: CMD under `timeout` (LIMIT_S, less when the deadline is nearer), its
# output in $WORK/logs/NAME.log (its last lines on the screen; all of them in logs.txt at the end);
# its exit status and seconds in steps.tsv. A step GPU_CHECK_STEPS leaves out is not run nor listed
step() {
    local name=$1 limit=$2; shift 2
    local over="GPU_CHECK_LIMIT_$name"
    [[ -n ${!over:-} ]] && limit=${!over}   # e.g. GPU_CHECK_LIMIT_throughput=160 for a rerun of that step
    if [[ -n ${GPU_CHECK_STEPS:-} && $name != install && $name != summary && " $GPU_CHECK_STEPS " != *" $name "* ]]; then
        return
    fi
    local left=$((DEADLINE - ($(date +%s) - START)))
    (( limit > left )) && limit=$left
    if (( limit < 5 )); then
        printf '%s\tskipped\t0\t%s\n' "$name" "$limit" >> "$STEPS"; echo "== $name: skipped (deadline)"; return
    fi
    echo "== $name (limit ${limit} s)"
    local t0=$(date +%s.%N) rc
    timeout -k 10 "$limit" "$@" > "$WORK/logs/$name.log" 2>&1
    rc=$?
    tail -n 4 "$WORK/logs/$name.log"
    printf '%s\t%s\t%s\t%s\n' "$name" "$rc" "$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN {printf "%.1f", b - a}')" \
        "$limit" >> "$STEPS"
}

L() { [[ $MODE == gpu ]] && echo "$1" || echo "$2"; }   # a step's limit: gpu, rehearse
G=benchmarks/gpu
step install "$(L 30 600)" "$PY" -m pip install -q --no-index --no-deps --disable-pip-version-check \
    --no-warn-conflicts --target "$SITE" "$KIT"/*.whl
step imports "$(L 30 300)" "$PY" $G/step_imports.py
step tests_gpu "$(L 45 300)" "$PY" -m pytest -q -p no:cacheprovider -o addopts="" -m gpu --timeout 300 \
    --junitxml "$WORK/tests_gpu.xml" tests/gpu/test_amp_cuda.py tests/gpu/test_device_paths.py
# the notebooks right after the imports and tests (they matter most): sized by cut.py from the GPU
# records to finish on one card in 330 s (the step's limit adds 10 s for its start); rehearsing, at
# most 3400 s (the same plan on the CPU). 330 s, not the 240 s of the check of 2026-12-04: there the
# planned runs took 132 s and four notebooks stopped at 104 s, while the throughput matrix had been
# measured on two cards already; it now gets what is left (about a minute), the notebooks first
NB_BUDGET=$(L 330 3400)
step notebooks "$((NB_BUDGET + 10))" "$PY" $G/step_notebooks.py --budget "$NB_BUDGET"
# the throughput step gets what is left but the run end to end (75 s on the GPU, 240 s rehearsing)
# and the summary (15 s, 120 s rehearsing); its budget: its limit less 15 s for the imports
TP_LIMIT=$(( DEADLINE - ($(date +%s) - START) - $(L 90 360) ))
(( TP_LIMIT > $(L 300 360) )) && TP_LIMIT=$(L 300 360)
[[ -n ${GPU_CHECK_LIMIT_throughput:-} ]] && TP_LIMIT=$GPU_CHECK_LIMIT_throughput
step throughput "$TP_LIMIT" "$PY" $G/step_throughput.py --budget "$(( TP_LIMIT - 15 ))"
# from an empty store of its own: the notebooks' store already holds its pretraining run
step train_run "$(L 75 240)" env MLPL_LAB_DATA="$WORK/data-train-run" "$PY" $G/step_train.py
DEADLINE=$((DEADLINE + $(L 15 120))) step summary "$(L 15 120)" "$PY" $G/summary.py --wall "$(( $(date +%s) - START ))" \
    --junit "$WORK/tests_gpu.xml"
# every step's output in one file (the records stay at most 8 files)
{ for f in "$WORK"/logs/*.log; do echo "=== $(basename "$f" .log)"; tail -n 300 "$f"; done
  [[ -f $WORK/former-logs.txt ]] && { echo "=== the former check's logs (steps not rerun)"; cat "$WORK/former-logs.txt"; }
} > "$RECORDS/logs.txt" 2>/dev/null
cat "$RECORDS/summary.txt" 2>/dev/null
rm -rf "$WORK"
# exit 0 only when every step passed
awk -F'\t' 'NR > 1 && $2 != "0" {bad = 1} END {exit bad}' "$STEPS"
