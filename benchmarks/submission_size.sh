#!/usr/bin/env bash
# What a stop would submit, measured the way the submission limits count it: the diffs of every
# commit since BASE (the main this session started from) added up as text, binary files as git's
# --binary patches (base85: about 1.29 x the bytes; a deleted file counts its whole content, a file
# added and later removed counts twice). Over 256 MiB the whole submission is refused: stop 60's
# landing (the pack beside the deletion of the 178 MiB kit) was. Usage: submission_size.sh BASE
set -euo pipefail
base="${1:?usage: $0 BASE (the commit this session started from: git rev-parse HEAD at its start)}"
limit=$((256 * 1024 * 1024))
bytes=$(git log -p --binary --format=%H "$base..HEAD" | wc -c)
printf '%s commits since %s: %d bytes of diffs (%.1f MiB of the 256 MiB limit)\n' \
    "$(git rev-list --count "$base..HEAD")" "$(git rev-parse --short "$base")" "$bytes" \
    "$(echo "$bytes / 1048576" | bc -l)"
[ "$bytes" -lt "$limit" ] || { echo "over the limit: split the submission across stops" >&2; exit 1; }
