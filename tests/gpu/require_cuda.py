"""``make test-gpu`` runs this first: it refuses to start without a CUDA device, with a message
that says why and what to run instead (exit status 2)."""
from __future__ import annotations

import sys


def main() -> int:
    import torch

    if torch.cuda.is_available():
        print(f"CUDA device: {torch.cuda.get_device_name(0)} (torch {torch.__version__})")
        return 0
    print("make test-gpu needs a CUDA GPU: torch.cuda.is_available() is False on this machine "
          f"(torch {torch.__version__}). It executes every notebook under the gpu profile "
          "(ResNet-18, 20,000 images, 20 epochs: hours without a GPU). Run it on a machine with "
          "a GPU; here, `make test` runs the notebooks under the smoke profile.", file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main())
