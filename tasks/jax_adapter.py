"""The JAX side of the training stack (see tasks/train.py for the adapter protocol).

AdamW as optax's `scale_by_adam` followed by the decoupled decay and the learning rate applied per
parameter group: p <- p - lr_g (adam_update + wd_g p), which is PyTorch's AdamW step
p <- p (1 - lr wd) - lr adam_update. The recurrence parameters have their own rate and no decay.
Gradients are clipped by `schedule.clip_scale` (the formula both sides share). Dropout keys are
`fold_in(PRNGKey(seed), step)`, so a resumed run draws the same masks.

With dtype float64 every method computes inside `linrnn.impls.jax.float64()` (JAX's 64-bit mode,
scoped to the call): importing this module changes no process-wide JAX setting.

Data parallel (`devices` W > 1): a one-axis device mesh over the first W local devices; each global
batch is placed sharded along its batch axis and the parameters and optimiser state replicated, and
XLA partitions the one jitted step (the gradient's sum over the batch becomes a cross-device
reduction). The loss is the same global mean as on one device, so a W-way step is the 1-way step.
Evaluation batches (any size) are placed replicated.
"""

from __future__ import annotations

import functools
from functools import partial

import jax
import jax.numpy as jnp
import numpy as np
import optax

from linrnn.impls.bundle import Bundle, is_recurrence_key
from linrnn.base.errors import LinrnnError
from linrnn.impls.jax import from_bundle, model, precision, to_bundle
from linrnn.tasks.config import TrainConfig
from linrnn.tasks.datatasks import IGNORE_INDEX, ModelBatch
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


def objective_loss(objective: str, out, targets, mask):
    """The objective's mean loss of the global batch (tasks/train.py; the torch side forms the same)."""
    if objective == "regression":
        pred = out[:, -targets.shape[1]:]                                # (B L_out d_out)
        m = mask[..., None].astype(pred.dtype)
        return jnp.sum((pred - targets) ** 2 * m) / (jnp.sum(m) * pred.shape[-1])
    C = out.shape[-1]
    logits, y = out.reshape(-1, C), targets.reshape(-1)
    keep = y != IGNORE_INDEX
    safe = jnp.where(keep, y, 0)
    nll = -jnp.take_along_axis(jax.nn.log_softmax(logits, axis=-1), safe[:, None], axis=-1)[:, 0]
    if objective == "segmentation":   # per-batch weights 1 / count of each class (DLR)
        counts = jnp.zeros(C, logits.dtype).at[safe].add(keep.astype(logits.dtype))
        w = jnp.where(keep, 1.0 / jnp.maximum(counts, 1.0)[safe], 0.0)
    else:
        w = keep.astype(logits.dtype)
    return jnp.sum(w * nll) / jnp.sum(w)


@jax.jit
def _squared_norm(grads) -> jnp.ndarray:
    """The squared global norm of the gradients, on the device, in their dtype."""
    return sum(jnp.sum(jnp.square(g)) for g in jax.tree_util.tree_leaves(grads))


class Adapter:
    rank, world_size = 0, 1      # one process; its devices share the work (`devices`)

    def __init__(self, bundle: Bundle, cfg: TrainConfig):
        self.cfg = cfg
        self._mesh(cfg.devices)
        self._setup(bundle)

    def _mesh(self, n: int) -> None:
        from jax.sharding import Mesh, NamedSharding, PartitionSpec

        if n > len(jax.devices()):
            raise LinrnnError(f"devices: expected at most the {len(jax.devices())} {jax.default_backend()} devices "
                              f"JAX sees here, found {n} (CPU: XLA_FLAGS=--xla_force_host_platform_device_count={n})")
        mesh = Mesh(np.array(jax.devices()[:n]), ("data",))
        self.sharded = NamedSharding(mesh, PartitionSpec("data"))
        self.replicated = NamedSharding(mesh, PartitionSpec())

    def _put(self, array, dtype, sharded: bool):
        return jax.device_put(jnp.asarray(array, dtype), self.sharded if sharded else self.replicated)

    @_scoped
    def _setup(self, bundle: Bundle) -> None:
        cfg = self.cfg
        self.model_cfg = bundle.config
        params = jax.device_put(from_bundle(bundle, cfg.dtype), self.replicated)
        self.trainable = {k: v for k, v in params.items() if not _is_statistic(k)}
        self.statistics = {k: v for k, v in params.items() if _is_statistic(k)}
        self.adam = optax.scale_by_adam(b1=cfg.beta1, b2=cfg.beta2, eps=cfg.eps)
        # replicated like the parameters: `adam.init` puts its step count on the default device alone, and the
        # update's output is replicated, so the second step's update would see another sharding and retrace
        self.opt_state = jax.device_put(self.adam.init(self.trainable), self.replicated)
        self.recurrence = {k: is_recurrence_key(k, self.model_cfg) for k in self.trainable}
        self._grad = jax.jit(jax.value_and_grad(self._loss, has_aux=True))

    def _loss(self, trainable, statistics, inputs, lengths, targets, mask, key):
        out, stats = model.forward_train({**trainable, **statistics}, self.model_cfg, inputs, key, lengths,
                                         mode=self.cfg.compute_mode, remat=self.cfg.grad_checkpointing)
        return objective_loss(self.cfg.objective, out, targets, mask), stats

    def _inputs(self, batch: ModelBatch, sharded: bool):
        dtype = self.cfg.dtype
        x = self._put(batch.inputs, jnp.int32 if batch.inputs.dtype.kind in "iu" else dtype, sharded)
        return x, self._put(batch.lengths, jnp.int32, sharded)

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
    def train_step(self, batch: ModelBatch, step: int, lr: float, rec_lr: float) -> float:
        key = jax.random.fold_in(jax.random.PRNGKey(self.cfg.seed), step)
        dtype = self.cfg.dtype
        inputs, lengths = self._inputs(batch, sharded=True)
        regression = self.cfg.objective == "regression"
        targets = self._put(batch.targets, dtype if regression else jnp.int32, True)
        mask = self._put(batch.mask if regression else np.zeros(len(batch.targets), bool), bool, True)
        (loss, stats), grads = self._grad(self.trainable, self.statistics, inputs, lengths, targets, mask, key)
        loss = float(loss)
        if not np.isfinite(loss):
            return loss
        norm = float(np.sqrt(float(_squared_norm(grads))))
        if not np.isfinite(norm):
            return float("nan")
        scale = clip_scale(norm, self.cfg.grad_clip)
        self.trainable, self.opt_state = self._update(self.trainable, self.opt_state, grads,
                                                      jnp.asarray(scale, dtype), jnp.asarray(lr, dtype),
                                                      jnp.asarray(rec_lr, dtype))
        self.statistics = {**self.statistics, **stats}
        return loss

    @_scoped
    def predict(self, batch: ModelBatch) -> np.ndarray:
        inputs, lengths = self._inputs(batch, sharded=False)
        out = model.forward({**self.trainable, **self.statistics}, self.model_cfg, inputs, lengths,
                            mode=self.cfg.compute_mode)
        return np.asarray(out, dtype=np.float64)

    def reduce(self, array: np.ndarray) -> np.ndarray:
        return np.asarray(array, dtype=np.float64)

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
        self.opt_state = jax.device_put(optax.ScaleByAdamState(
            count=jnp.asarray(int(state["count"]), dtype=self.opt_state.count.dtype),
            mu={k: jnp.asarray(state[f"m.{k}"], dtype) for k in self.trainable},
            nu={k: jnp.asarray(state[f"v.{k}"], dtype) for k in self.trainable}), self.replicated)
