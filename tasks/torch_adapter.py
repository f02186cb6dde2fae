"""The PyTorch side of the training stack (see tasks/train.py for the adapter protocol).

AdamW from `torch.optim` with two groups: the recurrence parameters (own learning rate, no weight
decay) and the rest. Gradients are clipped by `schedule.clip_scale` (the formula both sides share).
Dropout masks come from PyTorch's global generator, seeded from (seed, step) before every step, so a
resumed run draws the same masks.

Device: the GPU of this rank (`cuda:LOCAL_RANK`) when PyTorch sees one, else the CPU. With
`autocast` (by default: on a GPU in float32, off on the CPU) the forward runs under
`torch.autocast(bfloat16)`: the projections in bf16, the recurrence and the parameters in float32
(docs/precision.md); the loss is formed in float32. `grad_checkpointing` recomputes each block in
the backward (`Model.forward(checkpoint=True)`).

Data parallel, W processes on one machine (on CPUs too):

    torchrun --standalone --nproc-per-node W -m linrnn train --config FILE [--data DIR] --set devices=W --out DIR

(`torchrun` is `python -m torch.distributed.run`; `--standalone` finds a free port). Each process joins
the process group (NCCL on GPUs, gloo on CPUs) and wraps the model in `DistributedDataParallel`, which
averages the gradients over the ranks. Each rank's loss is its share of the *global* loss (numerator over
the global denominator, times W to undo DDP's average), so a W-way step is the 1-way step on the same
global batch. BatchNorm normalises with each rank's own batch statistics, and the stored statistics are
rank 0's on every rank after each step (so all ranks evaluate the model rank 0 saves); dropout masks are
drawn per rank.
"""

from __future__ import annotations

import atexit
import os

import numpy as np
import torch
import torch.nn.functional as F

from linrnn.impls.bundle import Bundle
from linrnn.impls.torch import Model, parameter_groups
from linrnn.tasks.config import TrainConfig
from linrnn.tasks.datatasks import IGNORE_INDEX, ModelBatch
from linrnn.tasks.schedule import clip_scale


def _join_group(cfg: TrainConfig) -> tuple[int, int, torch.device]:
    """(rank, world size, device) of this process; joins torchrun's process group when W > 1."""
    import torch.distributed as dist

    world = int(os.environ.get("WORLD_SIZE", "1"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    device = torch.device(f"cuda:{local}") if torch.cuda.is_available() else torch.device("cpu")
    if device.type == "cuda":
        torch.cuda.set_device(device)
    if world > 1 and not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
        atexit.register(_leave_group)
    return (dist.get_rank() if world > 1 else 0), world, device


def _leave_group() -> None:
    """At exit, before the interpreter finalises: wait (without the GIL) for gloo's worker threads to drop
    their last references to the tensors of finished collectives, then destroy the process group.

    Dropping such a reference frees a Python tensor and so takes the GIL; a thread that takes it while the
    interpreter finalises aborts the process ("terminate called without an active exception", SIGABRT
    after a finished run). Destroying the group does not stop these threads: DistributedDataParallel
    keeps the group alive until the process ends."""
    import time

    import torch.distributed as dist

    time.sleep(0.1)
    if dist.is_initialized():
        dist.destroy_process_group()


class Adapter:
    def __init__(self, bundle: Bundle, cfg: TrainConfig):
        self.cfg = cfg
        self.dtype = getattr(torch, cfg.dtype)
        self.rank, self.world_size, self.device = _join_group(cfg)
        self.model = Model.from_bundle(bundle, self.dtype, self.device)
        self.net = self.model
        if self.world_size > 1:
            self.net = torch.nn.parallel.DistributedDataParallel(
                self.model, device_ids=[self.device.index] if self.device.type == "cuda" else None)
        groups = parameter_groups(self.model)
        self.optimizer = torch.optim.AdamW(
            [{"params": groups["recurrence"], "weight_decay": 0.0, "name": "recurrence"},
             {"params": groups["other"], "weight_decay": cfg.weight_decay, "name": "other"}],
            lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=cfg.eps)
        self.names = {id(p): name for name, p in self.model.named_parameters()}
        self.autocast = (self.device.type == "cuda" and self.dtype == torch.float32) if cfg.autocast is None \
            else cfg.autocast

    def _tensor(self, array: np.ndarray, dtype: torch.dtype | None = None) -> torch.Tensor:
        array = np.ascontiguousarray(array)
        if dtype is None:
            dtype = torch.int64 if array.dtype.kind in "iu" else torch.bool if array.dtype == bool else self.dtype
        return torch.from_numpy(array).to(self.device, dtype)

    def _forward(self, net, batch: ModelBatch, checkpoint: bool = False) -> torch.Tensor:
        with torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.autocast):
            out = net(self._tensor(batch.inputs), self._tensor(batch.lengths), mode=self.cfg.compute_mode,
                      checkpoint=checkpoint)
        return out.to(self.dtype)

    def _sum(self, value: torch.Tensor) -> torch.Tensor:
        """The sum over the ranks (a no-op with one)."""
        if self.world_size > 1:
            import torch.distributed as dist

            value = value.clone()
            dist.all_reduce(value)
        return value

    def _loss_terms(self, out: torch.Tensor, batch: ModelBatch) -> tuple[torch.Tensor, torch.Tensor]:
        """(numerator on this rank, denominator over all ranks) of the objective's mean loss."""
        objective = self.cfg.objective
        if objective == "regression":
            pred = out[:, -batch.targets.shape[1]:]
            mask = self._tensor(batch.mask, self.dtype)[..., None]
            num = ((pred - self._tensor(batch.targets)) ** 2 * mask).sum()
            return num, self._sum(mask.sum().detach() * pred.shape[-1])
        C = out.shape[-1]
        logits, targets = out.reshape(-1, C), self._tensor(batch.targets).reshape(-1)
        if objective == "segmentation":   # per-batch weights 1 / count of each class (DLR)
            keep = targets != IGNORE_INDEX
            counts = self._sum(torch.bincount(targets[keep], minlength=C).to(self.dtype))
            weights = torch.where(counts > 0, 1.0 / counts.clamp(min=1.0), torch.zeros_like(counts))
            num = F.cross_entropy(logits, targets, weight=weights, ignore_index=IGNORE_INDEX, reduction="sum")
            return num, self._sum(weights[targets[keep]].sum())
        num = F.cross_entropy(logits, targets, ignore_index=IGNORE_INDEX, reduction="sum")
        return num, self._sum((targets != IGNORE_INDEX).sum().to(self.dtype))

    def train_step(self, batch: ModelBatch, step: int, lr: float, rec_lr: float) -> float:
        self.net.train()
        self._seed_dropout(self.cfg.seed * 1_000_003 + step)
        out = self._forward(self.net, batch, checkpoint=self.cfg.grad_checkpointing)
        num, den = self._loss_terms(out, batch)
        loss = num / den
        total = float(self._sum(loss.detach()))
        if not np.isfinite(total):
            return total
        self.optimizer.zero_grad(set_to_none=True)
        (loss * self.world_size).backward()        # DDP averages the ranks' gradients
        grads = [p.grad for p in self.model.parameters() if p.grad is not None]
        norm = float(torch.sqrt(sum((g.double() ** 2).sum() for g in grads)))
        if not np.isfinite(norm):
            return float("nan")
        scale = clip_scale(norm, self.cfg.grad_clip)
        if scale != 1.0:
            for g in grads:
                g.mul_(scale)
        for group in self.optimizer.param_groups:
            group["lr"] = rec_lr if group["name"] == "recurrence" else lr
        self.optimizer.step()
        self._share_statistics()
        return total

    def _seed_dropout(self, seed: int) -> None:
        """This step's dropout masks: the default generator of the CPU and of this rank's GPU, seeded.

        What `torch.manual_seed(seed)` does to the generators a step draws from, without its calls to
        every other accelerator's lazy seeding, which format a stack trace each (1.7 ms a step here, a
        few percent of a small model's step) where that accelerator is absent.
        """
        torch.default_generator.manual_seed(seed)
        if self.device.type == "cuda":
            index = self.device.index if self.device.index is not None else torch.cuda.current_device()
            torch.cuda.default_generators[index].manual_seed(seed)

    def _share_statistics(self) -> None:
        """Rank 0's BatchNorm statistics on every rank, so that all ranks evaluate the model rank 0 saves."""
        if self.world_size > 1:
            import torch.distributed as dist

            for buffer in self.model.buffers():
                dist.broadcast(buffer, 0)

    def predict(self, batch: ModelBatch) -> np.ndarray:
        self.model.eval()
        with torch.no_grad():
            out = self._forward(self.model, batch)
        return out.cpu().double().numpy()

    def reduce(self, array: np.ndarray) -> np.ndarray:
        return self._sum(torch.from_numpy(np.asarray(array, dtype=np.float64))).numpy()

    def to_bundle(self) -> Bundle:
        return self.model.to_bundle()

    def optimizer_state(self) -> dict[str, np.ndarray]:
        state: dict[str, np.ndarray] = {}
        count = 0
        for p in self.model.parameters():
            s = self.optimizer.state.get(p, {})
            name = self.names[id(p)]
            state[f"m.{name}"] = s["exp_avg"].double().cpu().numpy() if s else np.zeros(tuple(p.shape))
            state[f"v.{name}"] = s["exp_avg_sq"].double().cpu().numpy() if s else np.zeros(tuple(p.shape))
            count = int(s["step"]) if s else count
        state["count"] = np.array(float(count))
        return state

    def load_optimizer_state(self, state: dict[str, np.ndarray]) -> None:
        count = int(state["count"])
        if count == 0:
            return
        for p in self.model.parameters():
            name = self.names[id(p)]
            self.optimizer.state[p] = {
                "step": torch.tensor(float(count)),
                "exp_avg": self._tensor(state[f"m.{name}"], self.dtype).clone(),
                "exp_avg_sq": self._tensor(state[f"v.{name}"], self.dtype).clone(),
            }

