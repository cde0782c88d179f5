"""The GPU tests' oracle of the autocast dtype (from the device's description, not the lab's code)."""
from __future__ import annotations


def native_bfloat16(device) -> bool:
    """The oracle, from the device's description, not the lab's code: CUDA computes bfloat16
    natively from compute capability 8.0 on (Ampere, Hopper, ...; every ROCm device the lab
    meets), and the CPU's autocast is bfloat16."""
    import torch

    if device.type == "cpu":
        return True
    return torch.cuda.get_device_capability(device)[0] >= 8 or bool(torch.version.hip)
