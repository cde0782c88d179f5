#!/usr/bin/env bash
# Before a session ends: the series' finished runs (folders with summary.json, renamed into place
# whole by the store) that no earlier part holds go into the next part, xz-compressed, and their
# keys into carried.txt; the design branch is written to design.patch. Commit the folder.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/series.env"
touch "$here/carried.txt" "$here/rescored.txt"
git -C "$ROOT" format-patch --stdout "main..$BRANCH" > "$here/design.patch"
cd "$STORE/runs"
new=(); remade=()
for d in */; do
    k="${d%/}"
    [[ "$k" == .* ]] && continue
    [ -f "$k/summary.json" ] || continue
    [ -f "$k/pack.json" ] && continue  # imported from a pack, not this series'
    if grep -qx "$k" "$here/carried.txt"; then
        # carried before, then made again with the observed epoch's test score (rescore.py)
        grep -q '"selected"' "$k/summary.json" && ! grep -qx "$k" "$here/rescored.txt" && remade+=("$k")
    else
        new+=("$k")
    fi
done
new+=("${remade[@]}")
if [ ${#new[@]} -eq 0 ]; then echo "nothing new to carry"; exit 0; fi
# parts of at most PART_MIB (default 45) MiB before compression, so no part made since the cap
# reaches GitHub's 50 MB warning (45 MiB is about 47 MB, and xz adds well under 1 % even to incompressible
# weights); a run larger than that goes alone
limit_kb=$(( ${PART_MIB:-45} * 1024 ))
shopt -s nullglob; parts=("$here"/runs-part*.tar.xz); n=${#parts[@]}
pack() {  # the runs in "$@" into the next part
    n=$((n + 1)); local part="$here/runs-part$n.tar.xz"
    tar -c "$@" | nice xz -T1 -6 > "$part.tmp" && mv "$part.tmp" "$part"
    local k
    for k in "$@"; do
        if grep -qx "$k" "$here/carried.txt"; then echo "$k" >> "$here/rescored.txt"
        else echo "$k" >> "$here/carried.txt"; fi
    done
    echo "carried $# runs into $(basename "$part") ($(du -h "$part" | cut -f1))"
}
chunk=(); size=0
for k in "${new[@]}"; do
    kb=$(du -sk "$k" | cut -f1)
    if [ ${#chunk[@]} -gt 0 ] && [ $((size + kb)) -gt "$limit_kb" ]; then
        pack "${chunk[@]}"; chunk=(); size=0
    fi
    chunk+=("$k"); size=$((size + kb))
done
pack "${chunk[@]}"
echo "$(wc -l < "$here/carried.txt") runs carried in all, $(wc -l < "$here/rescored.txt") of them made again (rescore.py)"
