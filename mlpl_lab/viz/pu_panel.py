"""A widget for PU-MLC's loss: α (adaptive temperature) and γ (re-balance factor) on a fixed
batch of logits from a trained model.

``PUPanel.compute(alpha, gamma)`` is pure: from the batch's logits and observed positives it
returns, per class, the temperature T_c, the mean tempered probability, the re-balance weight
w_c = (mean p)^γ and the class's loss (autograd-free, from the registered ``vpu`` loss with
``reduction="none"``); classes are ordered by how many observed positives they have, so what
γ does to **rare** vs **frequent** classes reads left to right. The sliders call ``update``
through ``.observe``: setting ``panel.gamma.value`` in code recomputes ``panel.state``.
"""
from __future__ import annotations

from typing import Dict, Sequence

import matplotlib.pyplot as plt
import numpy as np
import torch

from ..losses.pu import pu_temperature, vpu_loss
from ..engine.train import predict_dataset
from .panel_display import show_in
from .cam import as_model
from .slider_range import check_slider, check_value


class PUPanel:
    """Sliders ``alpha`` (log scale: 10^a, a ∈ [-1, 1]; far left = no temperature) and
    ``gamma`` ∈ [0, 2]. ``logits`` (B, C) and ``observed`` (B, C) can be given directly, or
    computed from a trained ``method`` on ``dataset``'s first ``n`` images."""

    def __init__(self, method=None, dataset=None, n: int = 256, logits=None, observed=None,
                 alpha: float = 1.0, gamma: float = 0.55, class_names: Sequence[str] | None = None):
        import ipywidgets as W

        if logits is None:
            if method is None or dataset is None:
                raise ValueError("give logits and observed, or a trained method and a dataset")
            rows = list(range(min(int(n), len(dataset))))

            class _First:
                def __len__(self):
                    return len(rows)

                def get_batch(self, idx):
                    return dataset.get_batch(idx)

            device = next(as_model(method).parameters()).device
            p = predict_dataset(method, _First(), device).double().clamp(1e-7, 1 - 1e-7)
            method.train(False)
            logits = torch.log(p) - torch.log1p(-p)
            observed = dataset.observed[:len(rows)]
            class_names = class_names or getattr(dataset, "class_names", None)
        self.logits = torch.as_tensor(logits, dtype=torch.float64)
        self.observed = torch.as_tensor(observed)
        if self.logits.shape != self.observed.shape or self.logits.ndim != 2:
            raise ValueError(f"logits {tuple(self.logits.shape)} and observed {tuple(self.observed.shape)} "
                             "must both be (B, C)")
        C = self.logits.shape[1]
        self.names = list(class_names) if class_names is not None else [str(c) for c in range(C)]
        self.n_pos = (self.observed == 1).sum(0)
        self.order = torch.argsort(self.n_pos, stable=True)  # rare classes first
        # ipywidgets would clamp silently; α is given in its own units (0 or None: no temperature)
        if alpha:
            check_value("PUPanel", "alpha", alpha, 0.1, 10.0,
                        " (the slider shows log10 α from -1 to 1; pass 0 or None for no temperature)")
        style = {"description_width": "initial"}
        self.alpha = W.FloatSlider(value=float(np.log10(alpha)) if alpha else -1.05, min=-1.05, max=1.0,
                                   step=0.05, description="log10 α (far left: no temperature)", style=style)
        self.gamma = W.FloatSlider(value=float(gamma), min=0.0, max=2.0, step=0.05, description="γ", style=style)
        check_slider("PUPanel", "gamma", self.gamma, gamma)
        self.readout = W.HTML()
        self.output = W.Output()
        self.state: Dict[str, np.ndarray] = {}
        self.figure = None
        for s in (self.alpha, self.gamma):
            s.observe(self.update, names="value")
        self.widget = W.VBox([W.HBox([self.alpha, self.gamma], layout=W.Layout(flex_flow="row wrap")), self.readout, self.output])
        self.widget.add_class("mlpl-panel")
        self.widget.add_class("mlpl-panel-pu")  # what the browser tests find
        self.update()

    @staticmethod
    def alpha_of(log10_alpha: float):
        return None if log10_alpha <= -1.0 else float(10 ** log10_alpha)

    def values(self) -> Dict[str, float]:
        return {"alpha": self.alpha_of(self.alpha.value), "gamma": float(self.gamma.value)}

    def compute(self, alpha, gamma: float) -> Dict[str, np.ndarray]:
        """Pure: per class (rare → frequent) T_c, mean tempered q, mean untempered p, w_c and L_c."""
        s, pos = self.logits, (self.observed == 1).long()
        T = pu_temperature(s, alpha)
        q = torch.sigmoid(s / T)
        p = torch.sigmoid(s)
        w = p.mean(0) ** gamma
        loss = vpu_loss(s, pos, alpha=alpha, gamma=gamma, reduction="none")
        o = self.order
        return {"classes": np.array([self.names[i] for i in o]), "positives": self.n_pos[o].numpy(),
                "temperature": T[o].numpy(), "mean_q": q.mean(0)[o].numpy(), "mean_p": p.mean(0)[o].numpy(),
                "weight": w[o].numpy(), "loss": loss[o].detach().numpy(), "total": float(loss.sum())}

    def update(self, change=None) -> None:
        v = self.values()
        self.state = self.compute(**v)
        st = self.state
        rare, frequent = slice(0, max(1, len(st["weight"]) // 4)), slice(-max(1, len(st["weight"]) // 4), None)
        alpha_text = "none" if v["alpha"] is None else f"{v['alpha']:.2f}"
        self.readout.value = (f"<b>α = {alpha_text}, γ = {v['gamma']:.2f}</b>: "
                              f"total loss {st['total']:.3f}; mean weight w of the rarest quarter "
                              f"{st['weight'][rare].mean():.3f} vs the most frequent quarter "
                              f"{st['weight'][frequent].mean():.3f}; temperature range "
                              f"{st['temperature'].min():.2f}–{st['temperature'].max():.2f}")
        if self.figure is None:
            self._build_figure()
        ax_t, ax_p, ax_l = self.axes
        for artist, h in zip(self.bars["temperature"], st["temperature"]):
            artist.set_height(h)
        for artist, h in zip(self.bars["mean_p"], st["mean_p"]):
            artist.set_height(h)
        for artist, h in zip(self.bars["mean_q"], st["mean_q"]):
            artist.set_height(h)
        self.weight_line.set_ydata(st["weight"])
        for artist, h in zip(self.bars["loss"], st["loss"]):
            artist.set_height(h)
            artist.set_color("tab:red" if h >= 0 else "tab:green")
        ax_t.set_ylim(0, 1.05)
        ax_p.set_ylim(0, 1.05)
        lo, hi = min(0.0, float(st["loss"].min())), max(0.0, float(st["loss"].max()))
        ax_l.set_ylim(lo - 0.05 * (hi - lo + 1e-9), hi + 0.05 * (hi - lo + 1e-9))
        ax_t.set_title(f"temperature T_c = min(α·std(s_c), 1), α = {alpha_text}", fontsize=9)
        ax_p.set_title(f"mean probabilities and the weight w_c = (mean σ(s))^γ, γ = {v['gamma']:.2f}", fontsize=9)
        ax_l.set_title(f"loss per class L_c (total {st['total']:.3f})", fontsize=9)
        show_in(self.output, self.figure)

    def _build_figure(self) -> None:
        """The figure and its artists, once; updates only change their data (fast redraws)."""
        st = self.state
        fig, axes = plt.subplots(1, 3, figsize=(14, 3.6))
        x = np.arange(len(st["classes"]))
        self.bars = {"temperature": axes[0].bar(x, st["temperature"], color="tab:purple"),
                     "mean_p": axes[1].bar(x - 0.2, st["mean_p"], 0.4, label="mean σ(s)"),
                     "mean_q": axes[1].bar(x + 0.2, st["mean_q"], 0.4, label="mean σ(s/T)"),
                     "loss": axes[2].bar(x, st["loss"], color="tab:red")}
        (self.weight_line,) = axes[1].plot(x, st["weight"], "k.-", label="weight w_c")
        axes[1].legend(fontsize=7, loc="lower right")
        for ax in axes:
            ax.set_xticks(x, [f"{c} ({n})" for c, n in zip(st["classes"], st["positives"])], rotation=90, fontsize=6)
            ax.set_xlabel("class (observed positives), rare → frequent", fontsize=8)
        fig.tight_layout()
        plt.close(fig)  # drawn into the Output widget, not as a stray inline figure
        self.figure, self.axes = fig, axes

    def _ipython_display_(self):
        from IPython.display import display

        display(self.widget)
