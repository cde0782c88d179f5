#!/usr/bin/env bash
# Before a session ends: the series' finished runs (folders with summary.json, renamed into place
# whole by the store) that no earlier part holds go into the next part, xz-compressed, and their
# keys into carried.txt; the design branch is written to design.patch. Commit the folder.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
source "$here/series.env"
touch "$here/carried.txt"
git -C "$ROOT" format-patch --stdout "main..$BRANCH" > "$here/design.patch"
cd "$STORE/runs"
new=()
for d in */; do
    k="${d%/}"
    [[ "$k" == .* ]] && continue
    [ -f "$k/summary.json" ] || continue
    [ -f "$k/pack.json" ] && continue  # imported from a pack, not this series'
    grep -qx "$k" "$here/carried.txt" || new+=("$k")
done
if [ ${#new[@]} -eq 0 ]; then echo "nothing new to carry"; exit 0; fi
shopt -s nullglob; parts=("$here"/runs-part*.tar.xz); n=${#parts[@]}
part="$here/runs-part$((n + 1)).tar.xz"
tar -c "${new[@]}" | nice xz -T1 -6 > "$part.tmp" && mv "$part.tmp" "$part"
printf '%s\n' "${new[@]}" >> "$here/carried.txt"
echo "carried ${#new[@]} runs into $(basename "$part") ($(du -h "$part" | cut -f1)); $(wc -l < "$here/carried.txt") in all"
