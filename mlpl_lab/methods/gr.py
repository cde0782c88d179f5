"""GR Loss as a training method: per-epoch schedules of w, b, μ, σ and the Table 3 ablations.

``build_method("gr")`` trains :func:`mlpl_lab.losses.gr.gr_loss` with (w, b, μ, σ) from
:func:`mlpl_lab.losses.gr.gr_schedule` for the current epoch. ``schedule="paper"`` (default)
moves all four on the same t/T (Eq. 9, 10, 12, 13); ``schedule="code"`` reproduces the
official code, whose μ, σ run one epoch ahead of w, b. The values used are logged in each
history row (``w``, ``b``, ``mu``, ``sigma``).

Table 3 of the paper switches the three components off one by one; "off" means k̂ ≡ 0,
v ≡ 1 and q2 = q3 = 0.01 (the table's caption says q1 = q2 = q3 = 0.01; q1 stays the exact
-log p of the code in every row, so the rows differ only in the switched part), and all off
is (a q = 0.01 version of) AN. Passing q2/q3 together with robust=False is refused (the
switch would silently override them):

==================  =====  =====  ================
name                k̂      v      L1, L2, L3 robust
==================  =====  =====  ================
gr_none             ✗      ✗      ✗   (≈ AN)
gr_k_only           ✓      ✗      ✗
gr_v_only           ✗      ✓      ✗
gr_robust_only      ✗      ✗      ✓
gr_k_v              ✓      ✓      ✗
gr_k_robust         ✓      ✗      ✓
gr_v_robust         ✗      ✓      ✓
gr_all (= gr)       ✓      ✓      ✓
==================  =====  =====  ================

(The last row of Table 3, β and α learned by gradient descent, is not offered: the paper
reports it as inferior and the official code's ``--is_train`` path does not run.)
"""
from __future__ import annotations

from typing import Dict, Tuple

from ..losses.gr import GR_NEGATIVES, GR_SCHEDULE_DEFAULTS, SCHEDULES, gr_schedule, schedule_values
from .loss_method import LossMethod
from .registry import register_method

#: q2 and q3 when the robust losses are switched off (Table 3 caption; q1 stays as it is)
Q_OFF = 0.01
#: Table 6 (VOC) and the official code: q2 = 0.01, q3 = 1
Q2_DEFAULT, Q3_DEFAULT = 0.01, 1.0

#: Table 3: name -> (k̂ on, v on, robust L on)
ABLATIONS: Dict[str, Tuple[bool, bool, bool]] = {
    "gr_none": (False, False, False),
    "gr_k_only": (True, False, False),
    "gr_v_only": (False, True, False),
    "gr_robust_only": (False, False, True),
    "gr_k_v": (True, True, False),
    "gr_k_robust": (True, False, True),
    "gr_v_robust": (False, True, True),
    "gr_all": (True, True, True),
}

#: the registered methods whose targets follow GR's schedule to the last epoch (Eq. 9–13: k̂'s w, b
#: and v's μ, σ move linearly with the epoch): their validation curve may rise until the end
#: however long they train, so a convergence check marks them schedule-bound, not unconverged
#: (GR's share of the registry's flags, :func:`mlpl_lab.methods.registry.is_schedule_bound`, which
#: every table reads)
SCHEDULE_BOUND = frozenset({"gr"} | {name for name, (k, v, _) in ABLATIONS.items() if k or v})


class GRMethod(LossMethod):
    """GR Loss with linear per-epoch schedules (defaults: paper Table 6 for VOC, see
    :mod:`mlpl_lab.losses.gr`). ``use_k``, ``use_v``, ``robust`` switch the three components
    (Table 3); ``schedule`` is ``"paper"`` (default) or ``"code"``; ``w0`` ... ``sigma_T``
    override :data:`~mlpl_lab.losses.gr.GR_SCHEDULE_DEFAULTS`; ``neg`` is what an
    observed negative costs: ``"l3"`` (default), ``"bce"`` or ``"zero"`` (the official code;
    :mod:`mlpl_lab.losses.gr`)."""

    def __init__(self, *, schedule: str = "paper", q1=None, q2=None, q3=None,
                 use_k: bool = True, use_v: bool = True, robust: bool = True,
                 linear_init: int = 0, neg: str = "l3", **schedule_values_: float):
        if schedule not in SCHEDULES:
            raise ValueError(f"schedule must be one of {SCHEDULES}, got {schedule!r}")
        if neg not in GR_NEGATIVES:
            raise ValueError(f"neg must be one of {GR_NEGATIVES} (the loss of an observed negative: "
                             f"'l3' the lab's, 'bce', 'zero' the official code's), got {neg!r}")
        if robust:
            q2 = Q2_DEFAULT if q2 is None else q2
            q3 = Q3_DEFAULT if q3 is None else q3
        else:
            clash = {k: v for k, v in (("q2", q2), ("q3", q3)) if v is not None and v != Q_OFF}
            if clash:
                raise ValueError(f"robust=False sets q2 = q3 = {Q_OFF} (Table 3's 'off'); it would "
                                 f"override {clash}: drop them or keep robust=True")
            q2 = q3 = Q_OFF
        # q1 is the same in every row (None: the exact -log p of the official code, which the
        # paper's q1 = 0.01 approximates), so Table 3's rows differ only in the switched part
        # neg is passed (and so recorded) only when it is not the default L3
        super().__init__(loss="gr", q1=q1, q2=q2, q3=q3, **({} if neg == "l3" else {"neg": neg}))
        if isinstance(linear_init, bool) or not isinstance(linear_init, int) or linear_init < 0:
            raise ValueError(f"linear_init must be an integer >= 0, got {linear_init!r}")
        self.linear_init = linear_init
        self.schedule = schedule
        self.use_k, self.use_v, self.robust = bool(use_k), bool(use_v), bool(robust)
        # the start and end values (w0 ... sigma_T) over GR_SCHEDULE_DEFAULTS, the one copy of
        # Table 6's defaults; an unknown name is a TypeError
        self.schedule_hp = schedule_values(**schedule_values_)
        sigma0, sigma_T = self.schedule_hp["sigma0"], self.schedule_hp["sigma_T"]
        if sigma0 <= 0 or sigma_T < 0 or (sigma_T == 0 and use_v):
            raise ValueError("sigma0 and sigma_T must be positive (v's width)")
        self.hparams.update(schedule=schedule, use_k=use_k, use_v=use_v, robust=robust,
                            linear_init=linear_init,
                            **{k: v for k, v in self.schedule_hp.items()
                               if v != GR_SCHEDULE_DEFAULTS[k]})

    def parameters_at(self, epoch: int) -> Dict[str, float | None]:
        """(w, b, μ, σ) used in 0-based ``epoch``; None for a switched-off component."""
        values = gr_schedule(epoch, self.ctx.epochs, schedule=self.schedule,
                             linear_init=self.linear_init, **self.schedule_hp)
        if not self.use_k:
            values["w"] = values["b"] = None
        if not self.use_v:
            values["mu"] = values["sigma"] = None
        return values

    def loss_kwargs(self, epoch):
        return super().loss_kwargs(epoch) | self.parameters_at(epoch)

    def training_step(self, batch, epoch):
        loss, logs = super().training_step(batch, epoch)
        logs.update({k: v for k, v in self.parameters_at(epoch).items() if v is not None})
        return loss, logs


def _ablation_factory(name: str, flags: Tuple[bool, bool, bool]):
    use_k, use_v, robust = flags

    def factory(**hp):
        return GRMethod(use_k=use_k, use_v=use_v, robust=robust, **hp)

    factory.__name__ = f"{name}_method"
    factory.__doc__ = f"GR Loss ablation {name}: k̂ {'on' if use_k else 'off'}, v " \
                      f"{'on' if use_v else 'off'}, robust L {'on' if robust else 'off'} (Table 3)."
    return factory


def _gr_moves(hp) -> bool:
    """GR's targets move with the epoch while k̂ or v is on (Eq. 9–13)."""
    return bool(hp.get("use_k", True) or hp.get("use_v", True))


register_method("gr", schedule_bound=_gr_moves)(GRMethod)
for _name, _flags in ABLATIONS.items():
    register_method(_name, schedule_bound=bool(_flags[0] or _flags[1]))(_ablation_factory(_name, _flags))
