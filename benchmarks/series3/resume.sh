#!/usr/bin/env bash
# Resume the third cold cpu series on a new machine: the design's worktree, the runs carried so
# far unpacked into the store, then `mlpl-lab report` with the series' fresh stamp (never --cold:
# that would retrain what is carried). Run from the repository root after `make setup`.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"; root="$(cd "$here/../.." && pwd)"
source "$here/series.env"
[ -d "$WORKTREE" ] || git -C "$root" worktree add --detach "$WORKTREE" "$DESIGN_COMMIT"
mkdir -p "$STORE/runs"
for part in "$here"/runs-part*.tar.xz; do
    [ -e "$part" ] || continue
    xz -dc "$part" | tar -x -C "$STORE/runs" --skip-old-files
done
echo "$(ls "$STORE/runs" | wc -l) runs in $STORE/runs"
cd "$WORKTREE"
PYTHONPATH="$WORKTREE" MLPL_LAB_DATA="$STORE" nohup "$root/.venv/bin/mlpl-lab" report --profile cpu \
    --fresh-after "$FRESH_AFTER" --out "$STORE/reports" >> "$STORE/report.log" 2>&1 &
echo "series resumed (pid $!); log: $STORE/report.log"
