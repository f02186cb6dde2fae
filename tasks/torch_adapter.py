"""The PyTorch side of the training stack (see tasks/train.py for the adapter protocol).

AdamW from `torch.optim` with two groups: the recurrence parameters (own learning rate, no weight
decay) and the rest. Gradients are clipped by `schedule.clip_scale` (the formula both sides share).
Dropout masks come from PyTorch's global generator, seeded from (seed, step) before every step, so a
resumed run draws the same masks.
"""

from __future__ import annotations

import numpy as np
import torch

from linrnn.impls.bundle import Bundle
from linrnn.impls.torch import Model, parameter_groups
from linrnn.tasks.config import TrainConfig
from linrnn.tasks.schedule import clip_scale


class Adapter:
    def __init__(self, bundle: Bundle, cfg: TrainConfig):
        self.cfg = cfg
        self.dtype = getattr(torch, cfg.dtype)
        self.model = Model.from_bundle(bundle, self.dtype)
        groups = parameter_groups(self.model)
        self.optimizer = torch.optim.AdamW(
            [{"params": groups["recurrence"], "weight_decay": 0.0, "name": "recurrence"},
             {"params": groups["other"], "weight_decay": cfg.weight_decay, "name": "other"}],
            lr=cfg.lr, betas=(cfg.beta1, cfg.beta2), eps=cfg.eps)
        self.names = {id(p): name for name, p in self.model.named_parameters()}
        self.device = self.model.decoder.weight.device

    def _tensor(self, array: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(array)).to(self.device, self.dtype)

    def train_step(self, batch, step: int, lr: float, rec_lr: float) -> float:
        self.model.train()
        torch.manual_seed(self.cfg.seed * 1_000_003 + step)   # this step's dropout masks
        out = self.model(self._tensor(batch.inputs), mode=self.cfg.compute_mode)   # (B L_in d_out)
        pred = out[:, -batch.targets.shape[1]:]
        mask = self._tensor(batch.mask)[..., None]
        loss = ((pred - self._tensor(batch.targets)) ** 2 * mask).sum() / (mask.sum() * pred.shape[-1])
        if not torch.isfinite(loss):
            return float(loss.detach())
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
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
        return float(loss.detach())

    def predict(self, inputs: np.ndarray) -> np.ndarray:
        self.model.eval()
        with torch.no_grad():
            out = self.model(self._tensor(inputs), mode=self.cfg.compute_mode)
        return out.cpu().double().numpy()

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
                "exp_avg": self._tensor(state[f"m.{name}"]).clone(),
                "exp_avg_sq": self._tensor(state[f"v.{name}"]).clone(),
            }
