"""What the terminal shows while a notebook trains: the runner appends progress lines (run,
epoch, time left) to a file named by ``MLPL_LAB_PROGRESS_FILE``; :func:`progress_log` makes that
file for one command, and :func:`tailing` prints its new lines while one notebook runs."""
from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path


class Tail(threading.Thread):
    """Print the lines the runner appends to the progress file while a notebook runs."""

    def __init__(self, path: Path):
        super().__init__(daemon=True)
        # from the file's end: an earlier notebook's lines were printed while it ran
        self.path, self.stop = path, threading.Event()
        self.pos = path.stat().st_size if path.exists() else 0

    def poll(self):
        if self.path.exists():
            with open(self.path, encoding="utf-8") as f:
                f.seek(self.pos)
                for line in f:
                    print("  " + line.rstrip(), flush=True)
                self.pos = f.tell()

    def run(self):
        while not self.stop.wait(1.0):
            self.poll()
        self.poll()


@contextlib.contextmanager
def tailing(path: Path):
    """Within this block the progress lines appended to ``path`` are printed (the last ones once
    the block ends)."""
    tail = Tail(path)
    tail.start()
    try:
        yield tail
    finally:
        tail.stop.set()
        tail.join()


@contextlib.contextmanager
def progress_log(out: Path):
    """An empty ``<out>/.progress.log`` named to the runner and the kernels (they inherit
    ``MLPL_LAB_PROGRESS_FILE``) for the block; removed when it ends."""
    from ..runs.progress import PROGRESS_FILE_ENV

    progress_file = out / ".progress.log"
    progress_file.write_text("")
    os.environ[PROGRESS_FILE_ENV] = str(progress_file.resolve())
    try:
        yield progress_file
    finally:
        progress_file.unlink(missing_ok=True)
