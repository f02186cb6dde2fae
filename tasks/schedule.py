"""Learning-rate schedule and gradient clipping, defined once so both frameworks apply the same numbers.

Schedule: linear warm-up from 0 over `warmup_steps`, then cosine decay to 0 at `steps` (or constant).
The factor is a pure function of the step, so a resumed run continues on the same curve.

Clipping: the global norm over every gradient, scale = min(1, max_norm / norm). (PyTorch's
`clip_grad_norm_` adds 1e-6 to the norm and optax's `clip_by_global_norm` does not; the two sides
use this one formula instead, so that a step agrees across frameworks to rounding error.)

Which parameters are the recurrence's (own learning rate, no weight decay) is part of the model's
contract: `linrnn.impls.bundle.RECURRENCE_KEYS` / `is_recurrence_key`.
"""

from __future__ import annotations

import math



def lr_factor(step: int, steps: int, warmup_steps: int, schedule: str) -> float:
    """Multiplier of the peak learning rate at optimiser step `step` (0-based)."""
    if warmup_steps and step < warmup_steps:
        return (step + 1) / warmup_steps
    if schedule == "constant":
        return 1.0
    decay_steps = max(steps - warmup_steps, 1)
    progress = min(max(step - warmup_steps, 0) / decay_steps, 1.0)
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def clip_scale(global_norm: float, max_norm: float | None) -> float:
    """The factor every gradient is multiplied by before the optimiser step."""
    if max_norm is None or global_norm <= max_norm:
        return 1.0
    return max_norm / global_norm
