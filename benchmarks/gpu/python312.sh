#!/usr/bin/env bash
# Prints a working Python 3.12 interpreter (python3.12 on PATH, else pyenv's), or fails saying so.
for p in python3.12 "$HOME"/.pyenv/versions/3.12*/bin/python3.12 /usr/bin/python3.12 /usr/local/bin/python3.12; do
    if "$p" -c 'import sys; assert sys.version_info[:2] == (3, 12)' >/dev/null 2>&1; then
        command -v "$p" 2>/dev/null || echo "$p"; exit 0
    fi
done
echo "no Python 3.12 found (set PY312=/path/to/python3.12)" >&2
exit 1
