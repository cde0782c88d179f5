#!/usr/bin/env bash
# Start or resume the series in the background (after `make setup`). On a new machine it first
# rebuilds what a machine keeps between sessions but a new one does not: the worktree at main +
# design.patch, and the carried runs unpacked into the store. Never --cold: that would retrain them.
# Resume on the same machine after main moved: stop the series, `git -C build/series rebase main`.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/series.env"
cd "$ROOT"
if [ ! -d "$WORKTREE" ]; then
    git worktree add -B "$BRANCH" "$WORKTREE" main
    [ -s "$here/design.patch" ] && git -C "$WORKTREE" am "$here/design.patch"
fi
mkdir -p "$STORE/runs" "$STORE/reports"
shopt -s nullglob
# newest part first: a run made again (rescore.py) is in a later part than the one it replaces
for part in $(printf '%s\n' "$here"/runs-part*.tar.xz | sort -V -r); do
    xz -dc "$part" | tar -x -C "$STORE/runs" --skip-old-files
done
if [ -d "$KEPT" ]; then  # a machine kept from the last session: the runs stop.sh linked there
    for d in "$KEPT"/*/; do
        [ -e "$STORE/runs/$(basename "$d")" ] || cp -al "$d" "$STORE/runs/"
    done
fi
if pgrep -f "mlpl-lab report --profile cpu --out $STORE/reports" >/dev/null; then
    echo "the series is running already: tail $STORE/series.log"; exit 0
fi
# the runs of 07's cells without the observed-validation epoch's test score, moved aside so the
# report below makes them again (rescore.py; idempotent)
STORE="$STORE" MPLBACKEND=Agg "$ROOT/.venv/bin/python" "$here/rescore.py"
cd "$WORKTREE"
export PYTHONPATH="$WORKTREE" MLPL_LAB_DATA="$STORE" MLPL_LAB_SHIPPED_PACK=off
setsid nohup "$ROOT/.venv/bin/mlpl-lab" report --profile cpu --out "$STORE/reports" \
    --fresh-after "$FRESH_AFTER" >> "$STORE/series.log" 2>&1 < /dev/null &
echo "series resumed (pid $!): tail -f $STORE/series.log; $(ls "$STORE/runs" | wc -l) runs stored"
