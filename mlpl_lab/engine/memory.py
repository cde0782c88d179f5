"""Peak memory of a training run, for the benchmark's cost table.

* CUDA: ``torch.cuda.max_memory_allocated`` above what was allocated when the run started
  (tensors only, what a GPU user budgets).
* CPU (Linux): the process's peak resident set (``VmHWM``) above its size when the run
  started; the peak is reset at the start by writing 5 to ``/proc/self/clear_refs``. Memory
  the allocator kept from earlier runs in the same process is reused without raising the
  peak, so a run that follows a bigger one can read low: compare runs made in fresh processes,
  or read the figure as a lower bound.
* Elsewhere: ``None`` (the table says n/a).
"""
from __future__ import annotations

import re
from typing import Optional

import torch


def _status_kib(field: str) -> Optional[int]:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            m = re.search(rf"^{field}:\s+(\d+)\s+kB", f.read(), re.MULTILINE)
    except OSError:
        return None
    return int(m.group(1)) if m else None


class PeakMemory:
    """``PeakMemory(device)`` starts counting; ``.mib()`` is the peak above the start, MiB."""

    def __init__(self, device: torch.device):
        self.device = device
        if device.type == "cuda":
            torch.cuda.reset_peak_memory_stats(device)
            self.start = torch.cuda.memory_allocated(device)
            return
        try:
            with open("/proc/self/clear_refs", "w", encoding="ascii") as f:
                f.write("5")
            reset = True
        except OSError:
            reset = False
        rss = _status_kib("VmRSS")
        self.start = rss * 1024 if (reset and rss is not None) else None

    def mib(self) -> Optional[float]:
        if self.device.type == "cuda":
            return (torch.cuda.max_memory_allocated(self.device) - self.start) / 2**20
        if self.start is None:
            return None
        hwm = _status_kib("VmHWM")
        return None if hwm is None else max(0.0, (hwm * 1024 - self.start) / 2**20)
