"""The JAX side of the training stack (see tasks/train.py for the adapter protocol).

AdamW as optax's `scale_by_adam` followed by the decoupled decay and the learning rate applied per
parameter group: p <- p - lr_g (adam_update + wd_g p), which is PyTorch's AdamW step
p <- p (1 - lr wd) - lr adam_update. The recurrence parameters have their own rate and no decay.
Gradients are clipped by `schedule.clip_scale` (the formula both sides share). Dropout keys are
`fold_in(PRNGKey(seed), step)`, so a resumed run draws the same masks.

With dtype float64 every method computes inside `linrnn.impls.jax.float64()` (JAX's 64-bit mode,
scoped to the call): importing this module changes no process-wide JAX setting.
"""

from __future__ import annotations

import functools
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import optax

from linrnn.impls.bundle import Bundle, is_recurrence_key
from linrnn.impls.jax import from_bundle, model, precision, to_bundle
from linrnn.tasks.config import TrainConfig
from linrnn.tasks.schedule import clip_scale


def _scoped(method):
    """Run `method` in the precision scope of the run's dtype (float64: JAX's 64-bit mode, this call only)."""
    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        with precision(self.cfg.dtype):
            return method(self, *args, **kwargs)
    return wrapper


def _is_statistic(key: str) -> bool:
    return key.endswith(("norm.mean", "norm.var"))


class Adapter:
    def __init__(self, bundle: Bundle, cfg: TrainConfig):
        self.cfg = cfg
        self._setup(bundle)

    @_scoped
    def _setup(self, bundle: Bundle) -> None:
        cfg = self.cfg
        self.model_cfg = bundle.config
        params = from_bundle(bundle, cfg.dtype)
        self.trainable = {k: v for k, v in params.items() if not _is_statistic(k)}
        self.statistics = {k: v for k, v in params.items() if _is_statistic(k)}
        self.adam = optax.scale_by_adam(b1=cfg.beta1, b2=cfg.beta2, eps=cfg.eps)
        self.opt_state = self.adam.init(self.trainable)
        self.recurrence = {k: is_recurrence_key(k) for k in self.trainable}
        self._grad = jax.jit(jax.value_and_grad(self._loss, has_aux=True), static_argnames=("L_out",))

    def _loss(self, trainable, statistics, inputs, targets, mask, key, L_out: int):
        out, stats = model.forward_train({**trainable, **statistics}, self.model_cfg, inputs, key,
                                         mode=self.cfg.compute_mode)
        pred = out[:, -L_out:]                                           # (B L_out d_out)
        m = mask[..., None].astype(pred.dtype)
        loss = jnp.sum((pred - targets) ** 2 * m) / (jnp.sum(m) * pred.shape[-1])
        return loss, stats

    @partial(jax.jit, static_argnums=0)
    def _update(self, trainable, opt_state, grads, scale, lr, rec_lr):
        grads = jax.tree_util.tree_map(lambda g: g * scale, grads)
        updates, opt_state = self.adam.update(grads, opt_state, trainable)
        new = {}
        for k, p in trainable.items():
            rate = rec_lr if self.recurrence[k] else lr
            decay = 0.0 if self.recurrence[k] else self.cfg.weight_decay
            new[k] = p - rate * (updates[k] + decay * p)
        return new, opt_state

    @_scoped
    def train_step(self, batch, step: int, lr: float, rec_lr: float) -> float:
        key = jax.random.fold_in(jax.random.PRNGKey(self.cfg.seed), step)
        dtype = self.cfg.dtype
        (loss, stats), grads = self._grad(self.trainable, self.statistics, jnp.asarray(batch.inputs, dtype),
                                          jnp.asarray(batch.targets, dtype), jnp.asarray(batch.mask), key,
                                          L_out=batch.targets.shape[1])
        loss = float(loss)
        if not np.isfinite(loss):
            return loss
        norm = float(np.sqrt(sum(float(jnp.sum(jnp.asarray(g, jnp.float64) ** 2)) for g in grads.values())))
        if not np.isfinite(norm):
            return float("nan")
        scale = clip_scale(norm, self.cfg.grad_clip)
        self.trainable, self.opt_state = self._update(self.trainable, self.opt_state, grads,
                                                      jnp.asarray(scale, dtype), jnp.asarray(lr, dtype),
                                                      jnp.asarray(rec_lr, dtype))
        self.statistics = {**self.statistics, **stats}
        return loss

    @_scoped
    def predict(self, inputs: np.ndarray) -> np.ndarray:
        out = model.forward({**self.trainable, **self.statistics}, self.model_cfg,
                            jnp.asarray(inputs, self.cfg.dtype), mode=self.cfg.compute_mode)
        return np.asarray(out, dtype=np.float64)

    @_scoped
    def to_bundle(self) -> Bundle:
        return to_bundle(self.model_cfg, {**self.trainable, **self.statistics})

    @_scoped
    def optimizer_state(self) -> dict[str, np.ndarray]:
        s = self.opt_state
        state = {f"m.{k}": np.asarray(v, np.float64) for k, v in s.mu.items()}
        state.update({f"v.{k}": np.asarray(v, np.float64) for k, v in s.nu.items()})
        state["count"] = np.array(float(s.count))
        return state

    @_scoped
    def load_optimizer_state(self, state: dict[str, np.ndarray]) -> None:
        dtype = self.cfg.dtype
        self.opt_state = optax.ScaleByAdamState(
            count=jnp.asarray(int(state["count"]), dtype=self.opt_state.count.dtype),
            mu={k: jnp.asarray(state[f"m.{k}"], dtype) for k in self.trainable},
            nu={k: jnp.asarray(state[f"v.{k}"], dtype) for k in self.trainable})
