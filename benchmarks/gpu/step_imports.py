"""check.sh step 1: every top-level module the kit brings and every module of the lab import
(the book's Sphinx modules are run as a subprocess by ``mlpl-lab course book``, never imported,
so the kit leaves Sphinx, myst-nb, JupyterLab and jupyter_server_mathjax out: the check writes no
HTML). Records each distribution's version and whether it came from the kit or the image."""
from __future__ import annotations

import importlib
import importlib.metadata as md
import os
import pkgutil
import traceback

from _common import write

#: distribution -> the module the check needs from it (the issue's list of what the image lacks)
KIT_MODULES = {"papermill": "papermill", "nbclient": "nbclient", "nbformat": "nbformat",
               "nbconvert": "nbconvert", "ipykernel": "ipykernel", "jupyter-client": "jupyter_client",
               "ipywidgets": "ipywidgets", "grad-cam": "pytorch_grad_cam", "ttach": "ttach",
               "dask": "dask", "distributed": "distributed", "jupyterquiz": "jupyterquiz"}
#: what the check expects the image to bring
IMAGE_MODULES = {"torch": "torch", "torchvision": "torchvision", "torchmetrics": "torchmetrics",
                 "matplotlib": "matplotlib", "seaborn": "seaborn", "pandas": "pandas", "scipy": "scipy",
                 "scikit-learn": "sklearn", "opencv-python-headless": "cv2", "pillow": "PIL",
                 "tqdm": "tqdm", "pyyaml": "yaml", "pytest": "pytest"}


def origin(module) -> str:
    site = os.environ.get("PYTHONPATH", "").split(os.pathsep)
    f = getattr(module, "__file__", "") or ""
    return "tree" if f.startswith(site[0] + os.sep + "mlpl_lab") else (
        "kit" if any(p and f.startswith(p) for p in site[1:2]) else "image")


def main():
    failed, found = {}, {}
    for group in (KIT_MODULES, IMAGE_MODULES):
        for dist, mod in group.items():
            try:
                m = importlib.import_module(mod)
                found[dist] = {"version": md.version(dist), "from": origin(m)}
            except Exception as exc:
                failed[dist] = f"{type(exc).__name__}: {exc}"
    import mlpl_lab

    lab = 0
    for info in pkgutil.walk_packages(mlpl_lab.__path__, "mlpl_lab."):
        try:
            importlib.import_module(info.name)
            lab += 1
        except Exception:
            failed[info.name] = traceback.format_exc(limit=2)[-600:]
    wrong = [d for d in KIT_MODULES if found.get(d, {}).get("from") not in (None, "kit")]
    rec = {"what": "every module the kit brings, the image's and the lab's, imported",
           "distributions": found, "lab_modules_imported": lab, "failed": failed,
           "kit_distributions_not_from_the_kit": wrong,
           "lab_wheel_version": md.version("mlpl_lab")}
    print(f"{len(found)} distributions and {lab} lab modules imported; failed: {sorted(failed) or 'none'}")
    write("imports", rec)
    return 1 if failed else 0


if __name__ == "__main__":
    raise SystemExit(main())
