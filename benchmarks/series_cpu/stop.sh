#!/usr/bin/env bash
# Before a session stops (after carry.sh): end the series and everything it started. The report's
# workers are its children, but the notebook kernels it executes run in process sessions of their
# own (jupyter_client starts them so), and a kernel left running shares the cores with the CI run
# that follows the stop. Every process whose environment names the series' store is the series'.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/series.env"
ours() { grep -lzx "MLPL_LAB_DATA=$STORE" /proc/[0-9]*/environ 2>/dev/null | cut -d/ -f3 | grep -vx "$$" || true; }
link_kept() {  # the finished runs (folders with summary.json), hard-linked outside the work tree
    mkdir -p "$KEPT"
    for d in "$STORE"/runs/*/; do
        k="$(basename "$d")"
        [ -f "$d/summary.json" ] || continue
        [ "$d/summary.json" -ef "$KEPT/$k/summary.json" ] && continue
        rm -rf "${KEPT:?}/$k"  # a run made again (rescore.py) replaces the copy kept before
        cp -al "$d" "$KEPT/"
    done
    echo "$(ls "$KEPT" | wc -l) finished runs linked in $KEPT (resume.sh takes them on a kept machine)"
}
trap link_kept EXIT
pids=$(ours)
if [ -z "$pids" ]; then echo "the series is not running"; exit 0; fi
echo "stopping the series: $(echo $pids | wc -w) processes"
kill -TERM $pids 2>/dev/null || true
for _ in $(seq 30); do [ -z "$(ours)" ] && break; sleep 1; done
left=$(ours)
[ -z "$left" ] || { echo "killing $(echo $left | wc -w) that outlived TERM"; kill -KILL $left 2>/dev/null || true; sleep 1; }
[ -z "$(ours)" ] && echo "stopped: no process of the series is left (resume.sh starts it again)"
