"""A widget for LAC: PLC's threshold δ on a trained model's fixed batch, and the attention map
of a chosen image and class.

``LACPanel.compute(delta, image, class_index)`` is pure: it reads probabilities and attention
maps computed once at construction (no network call) and returns the PLC breakdown of the
batch's unknown labels (:func:`mlpl_lab.analysis.lac_diagnostics.plc_breakdown`) and the map
to overlay. ``update()`` redraws the figure and the text readout from it; the controls call it
through ``.observe``, so setting ``panel.delta.value = 0.9`` in code (tests, papermill)
recomputes ``panel.state`` without a front end.
"""
from __future__ import annotations

from typing import Dict, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch

from ..analysis.lac_diagnostics import plc_breakdown
from ..engine.train import predict_dataset
from .attention import attention_maps
from .panel_display import show_in
from .cam import as_model, class_status
from .slider_range import check_value


#: the δ slider's range
DELTA_RANGE = (0.5, 0.99)


class LACPanel:
    """Slider ``delta`` (δ ∈ [0.5, 0.99]), slider ``image`` (position in the batch) and dropdown
    ``class_index`` (that image's classes: true ones first, then the rest).

    ``method``: a trained LAC-family method (label-query head); ``dataset``: a set with true
    labels, observed labels and masks (the training split, whose unknowns PLC labels);
    ``indices``: the fixed batch (default: the first 64 images).
    """

    def __init__(self, method, dataset, indices: Sequence[int] | None = None, delta: float = 0.6,
                 class_names=None):
        import ipywidgets as W

        # the slider's range, checked first (ipywidgets would clamp silently, after the network ran)
        check_value("LACPanel", "delta", delta, *DELTA_RANGE)
        plc_breakdown(torch.zeros(1, 1), -torch.ones(1, 1), torch.zeros(1, 1), delta)  # validates δ
        indices = list(range(min(64, len(dataset)))) if indices is None else [int(i) for i in indices]
        if not indices:
            raise ValueError("indices is empty: give the panel at least one image")
        self.indices = indices
        idx = torch.as_tensor(indices)
        self.names = list(class_names) if class_names is not None else list(dataset.class_names)

        class _Batch:  # the fixed batch as a dataset (predict_dataset's interface)
            def __len__(self_inner):
                return len(indices)

            def get_batch(self_inner, rows):
                return dataset.get_batch(idx[torch.as_tensor(rows)])

        # precomputed once: compute() never calls the network (weak view = the clean image)
        device = next(as_model(method).parameters()).device
        self.probs = predict_dataset(method, _Batch(), device)
        method.train(False)
        self.observed = dataset.observed[idx]
        self.labels = dataset.labels[idx]
        self.images = dataset.images[idx]
        self.maps = attention_maps(as_model(method), self.images)
        self.delta = W.FloatSlider(value=float(delta), min=DELTA_RANGE[0], max=DELTA_RANGE[1], step=0.01, readout_format=".2f",
                                   description="δ (PLC threshold)", style={"description_width": "initial"})
        self.image = W.IntSlider(value=0, min=0, max=len(indices) - 1, description="image in batch",
                                 style={"description_width": "initial"})
        self.class_index = W.Dropdown(options=self._class_options(0), description="class")
        self.readout = W.HTML()
        self.output = W.Output()
        self.state: Dict[str, object] = {}
        self.figure = None
        self.image.observe(self._on_image, names="value")
        for control in (self.delta, self.class_index):
            control.observe(self.update, names="value")
        self.widget = W.VBox([W.HBox([self.delta, self.image, self.class_index], layout=W.Layout(flex_flow="row wrap")), self.readout, self.output])
        self.widget.add_class("mlpl-panel")
        self.widget.add_class("mlpl-panel-lac")  # what the browser tests find
        self.update()

    def _class_options(self, image: int):
        y = self.labels[image]
        order = torch.nonzero(y == 1).flatten().tolist() + torch.nonzero(y != 1).flatten().tolist()
        return [(f"{self.names[c]} ({class_status(int(self.observed[image, c]), int(y[c]))})", c)
                for c in order]

    def _on_image(self, change=None) -> None:
        options = self._class_options(self.image.value)
        with self.class_index.hold_trait_notifications():
            self.class_index.options = options
            self.class_index.value = options[0][1]
        self.update()

    def values(self) -> Dict[str, float]:
        return {"delta": float(self.delta.value), "image": int(self.image.value),
                "class_index": int(self.class_index.value)}

    def compute(self, delta: float, image: int, class_index: int) -> Dict[str, object]:
        """Pure: the PLC breakdown at ``delta`` over the batch's unknowns, the status of every
        unknown entry (``pseudo``: 1 pseudo-positive, 0 pseudo-negative, -1 ignored, NaN
        observed) and the attention map of (``image``, ``class_index``)."""
        b = plc_breakdown(self.probs, self.observed, self.labels, delta)
        pseudo = torch.full(self.probs.shape, float("nan"))
        unk = self.observed == -1
        pseudo[unk] = -1.0
        pseudo[unk & (self.probs >= delta)] = 1.0
        pseudo[unk & (self.probs <= 1 - delta)] = 0.0
        return {"breakdown": b, "pseudo": pseudo.numpy(),
                "map": self.maps[image, class_index].numpy(),
                "status": class_status(int(self.observed[image, class_index]), int(self.labels[image, class_index])),
                "prob": float(self.probs[image, class_index])}

    def readout_text(self) -> str:
        b, v = self.state["breakdown"], self.values()
        pct = lambda x: "n/a" if not np.isfinite(x) else f"{100 * x:.1f} %"  # noqa: E731
        return (f"<b>δ = {v['delta']:.2f}</b> over {int(b['unknown'])} unknown labels "
                f"({int(b['hidden'])} hidden positives): "
                f"pseudo-positives {int(b['pseudo_pos_present'] + b['pseudo_pos_absent'])} "
                f"(precision {pct(b['pos_precision'])}, recall {pct(b['pos_recall'])}); "
                f"pseudo-negatives {int(b['pseudo_neg_present'] + b['pseudo_neg_absent'])} "
                f"(precision {pct(b['neg_precision'])}); ignored "
                f"{int(b['ignored_present'] + b['ignored_absent'])}; coverage {pct(b['coverage'])}. "
                f"Map: {self.names[v['class_index']]} ({self.state['status']}, p = {self.state['prob']:.2f})")

    def update(self, change=None) -> None:
        self.state = self.compute(**self.values())
        self.readout.value = self.readout_text()
        first = self.figure is None
        if first:  # one figure, laid out once; each update redraws its axes (fast redraws)
            self.figure, self.axes = plt.subplots(1, 3, figsize=(13, 3.4), gridspec_kw={"width_ratios": [1.3, 1, 1]})
            plt.close(self.figure)  # drawn into the Output widget, not as a stray inline figure
        ax0, ax1, ax2 = self.axes
        for ax in self.axes:
            ax.clear()
        b = self.state["breakdown"]
        groups = ["pseudo_pos", "pseudo_neg", "ignored"]
        present = [b[f"{g}_present"] for g in groups]
        absent = [b[f"{g}_absent"] for g in groups]
        x = np.arange(3)
        ax0.bar(x, present, color="tab:orange", label="truly present (hidden positive)")
        ax0.bar(x, absent, bottom=present, color="tab:blue", label="truly absent")
        ax0.set_xticks(x, ["pseudo-positive\n(p ≥ δ)", "pseudo-negative\n(p ≤ 1-δ)", "ignored"])
        ax0.set_yscale("symlog")
        ax0.set_ylabel("unknown labels (symlog)")
        ax0.legend(fontsize=7)
        v = self.values()
        ax0.set_title(f"PLC on {len(self.indices)} training images, δ = {v['delta']:.2f}", fontsize=9)
        img = self.images[v["image"]].permute(1, 2, 0).clamp(0, 1).numpy()
        ax1.imshow(img)
        ax1.set_title(f"image {self.indices[v['image']]}", fontsize=9)
        ax2.imshow(img)
        ax2.imshow(self.state["map"], cmap="jet", alpha=0.5)
        ax2.set_title(f"attention: {self.names[v['class_index']]}\n({self.state['status']})", fontsize=9)
        for ax in (ax1, ax2):
            ax.set_xticks([])
            ax.set_yticks([])
        if first:
            self.figure.tight_layout()
        show_in(self.output, self.figure)

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)
