"""The deep model of docs/models.md, PyTorch: training and evaluation mode.

    encoder:  Linear(d_in -> H)  or  Embedding(vocab -> H)
    block i:  z = norm(x); z = mixer(z); z = gelu(z); z = dropout(z);
              z = glu(z) = (W1 z + b1) * sigmoid(W2 z + b2); z = dropout(z); x = x + z
              (prenorm; postnorm: the norm moves after the residual, x = norm(x + z) with z from x)
    norm:     LayerNorm over H, or BatchNorm over the B x L positions
    head:     pool over time (mean over the valid positions | last valid position | none), Linear(H -> d_out);
              retrieval: rows b and B + b of (2B L) inputs are one pair of documents, pooled to z1, z2 (B H):
              Linear(H -> d_out)(gelu(Linear(4H -> H)([z1, z2, z1 - z2, z1 * z2])))

Evaluation mode (`model.eval()`) computes exactly the reference's `model.forward`. Padded rows (`lengths`):
with `padding = "masked"` (the default) every mixer sees each row's valid positions only, as if the row were
alone (docs/models.md, "Padding and packed sequences"); "unmasked" runs the mixers over the padding. Training
mode: BatchNorm normalises with the statistics of the batch (all B x L positions; with padding "masked" the
valid ones only) and updates the stored ones (PyTorch's rule with `config.BATCHNORM_MOMENTUM`, unbiased variance); dropout draws one mask
per sequence and feature and uses it at every time step. GELU is the exact erf form. With
`checkpoint=True` each block's activations are recomputed in the backward pass instead of stored.

Module names follow the bundle's dotted keys (`encoder.weight`, `layers.0.norm.scale`,
`layers.0.mixer.theta`, `layers.0.glu.W1`, `head.weight`, `decoder.bias`, ...): `state_dict()` (parameters plus the
BatchNorm statistics `norm.mean` / `norm.var` as buffers) has exactly the bundle's keys.
"""

from __future__ import annotations

import contextlib

import torch
import torch.nn.functional as F
from torch import nn
from torch.utils.checkpoint import checkpoint as recompute_in_backward

from linrnn.impls import checks
from linrnn.impls.bundle import Bundle, sub_params
from linrnn.impls.config import BATCHNORM_MOMENTUM, ModelConfig
from linrnn.base.errors import LinrnnError
from linrnn.impls.specs import implementations
from linrnn.impls.torch.layer import LOW, MODES, export_bundle, load_bundle, padding_mask, torch_dtype

MIXERS = implementations("torch")   # kind -> its module class (each model registers it in its spec)


class Norm(nn.Module):
    """LayerNorm (over H) or BatchNorm (per feature, over B x L), with parameters `scale`, `bias`."""

    momentum = BATCHNORM_MOMENTUM   # BatchNorm's update of the stored statistics in training mode

    def __init__(self, norm: str, H: int, eps: float, dtype: torch.dtype, device=None):
        super().__init__()
        self.norm, self.eps = norm, eps
        self.scale = nn.Parameter(torch.ones(H, dtype=dtype, device=device))
        self.bias = nn.Parameter(torch.zeros(H, dtype=dtype, device=device))
        if norm == "batch":
            self.register_buffer("mean", torch.zeros(H, dtype=dtype, device=device))
            self.register_buffer("var", torch.ones(H, dtype=dtype, device=device))
        self.frozen = False   # True while a checkpointed block is recomputed (see `frozen_statistics`)

    @contextlib.contextmanager
    def frozen_statistics(self):
        """The recomputation of a checkpointed block: BatchNorm normalises with the batch's statistics as in
        the first pass, but with momentum 0 (stat <- stat), as the first pass updated the stored ones already.
        The stored statistics stay arguments of the op, so the recomputation saves what the first pass saved."""
        self.frozen = True
        try:
            yield
        finally:
            self.frozen = False

    def forward(self, x: torch.Tensor, valid: torch.Tensor | None = None) -> torch.Tensor:
        """x (B L H) -> (B L H); valid (B L 1) bool or None: BatchNorm's batch statistics count these positions only"""
        if self.norm == "layer":
            return F.layer_norm(x, x.shape[-1:], self.scale, self.bias, self.eps)
        if valid is None or not self.training:
            return F.batch_norm(x.transpose(1, 2), self.mean, self.var, self.scale, self.bias, training=self.training,
                                momentum=0.0 if self.frozen else self.momentum, eps=self.eps).transpose(1, 2)
        n = valid.sum()                                                       # the valid positions of the batch
        mean = torch.where(valid, x, 0.0).sum((0, 1)) / n                     # (H,)
        var = torch.where(valid, (x - mean) ** 2, 0.0).sum((0, 1)) / n        # (H,) biased
        if not self.frozen:
            with torch.no_grad():                                             # PyTorch's rule, unbiased variance
                self.mean.mul_(1 - self.momentum).add_(self.momentum * mean)
                self.var.mul_(1 - self.momentum).add_(self.momentum * var * n / (n - 1).clamp(min=1))
        return (x - mean) * torch.rsqrt(var + self.eps) * self.scale + self.bias


class GLU(nn.Module):
    """(W1 z + b1) * sigmoid(W2 z + b2), parameters `W1`, `b1`, `W2`, `b2`."""

    def __init__(self, H: int, dtype: torch.dtype, device=None):
        super().__init__()
        for name, shape in (("W1", (H, H)), ("b1", (H,)), ("W2", (H, H)), ("b2", (H,))):
            self.register_parameter(name, nn.Parameter(torch.zeros(shape, dtype=dtype, device=device)))

    def forward(self, z: torch.Tensor) -> torch.Tensor:
        return F.linear(z, self.W1, self.b1) * torch.sigmoid(F.linear(z, self.W2, self.b2))


class TimeSharedDropout(nn.Module):
    """Dropout whose mask is drawn once per sequence and feature and shared by every time step."""

    def __init__(self, p: float):
        super().__init__()
        self.p = p

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (B L H) -> (B L H); the identity in evaluation mode."""
        if not self.training or self.p == 0.0:
            return x
        keep = torch.full((x.shape[0], 1, x.shape[2]), 1.0 - self.p, dtype=x.dtype, device=x.device)
        return x * torch.bernoulli(keep) / (1.0 - self.p)


class Block(nn.Module):
    """norm -> mixer -> GELU -> dropout -> GLU -> dropout -> residual (prenorm), or the norm after the residual."""

    def __init__(self, cfg: ModelConfig, mixer_bundle: Bundle, dtype: torch.dtype, device=None):
        super().__init__()
        H = cfg.d_model
        self.prenorm = cfg.prenorm
        self.norm = Norm(cfg.norm, H, cfg.norm_eps, dtype, device)
        self.mixer = MIXERS[cfg.mixer.kind](mixer_bundle, dtype, device)
        self.glu = GLU(H, dtype, device)
        self.dropout = TimeSharedDropout(cfg.dropout)

    def forward(self, x: torch.Tensor, mode: str, lengths: torch.Tensor | None = None) -> torch.Tensor:
        """x (B L H) -> (B L H); lengths (B,) or None: the mixer and BatchNorm see each row's valid positions only"""
        valid = None if lengths is None else padding_mask(lengths, x.shape[1])
        z = self.norm(x, valid) if self.prenorm else x
        z, _ = self.mixer(z, mode, final_state=False, lengths=lengths)
        z = self.dropout(F.gelu(z))                     # exact erf GELU (PyTorch's default)
        z = self.dropout(self.glu(z))
        x = x + z
        return x if self.prenorm else self.norm(x, valid)


class Model(nn.Module):
    """The deep model; built from a model bundle, whose keys are its `state_dict()` keys."""

    def __init__(self, bundle: Bundle, dtype: torch.dtype = torch.float64, device=None):
        super().__init__()
        cfg = bundle.config
        if not isinstance(cfg, ModelConfig):
            raise LinrnnError(f"bundle: expected a model bundle, found a {cfg.kind} layer bundle")
        dtype = torch_dtype(dtype)
        self.config = cfg
        H = cfg.d_model
        if cfg.vocab_size is not None:
            self.encoder = nn.Embedding(cfg.vocab_size, H, dtype=dtype, device=device)
        else:
            self.encoder = nn.Linear(cfg.d_input, H, dtype=dtype, device=device)
        self.layers = nn.ModuleList([
            Block(cfg, Bundle(cfg.mixer, sub_params(bundle.params, f"layers.{i}.mixer.")), dtype, device)
            for i in range(cfg.n_layers)])
        if cfg.head == "retrieval":
            self.head = nn.Linear(4 * H, H, dtype=dtype, device=device)
        self.decoder = nn.Linear(H, cfg.d_output, dtype=dtype, device=device)
        load_bundle(self, bundle)

    @classmethod
    def from_bundle(cls, bundle: Bundle, dtype: torch.dtype = torch.float64, device=None) -> "Model":
        return cls(bundle, dtype, device)

    def to_bundle(self) -> Bundle:
        return export_bundle(self, self.config)

    @property
    def dtype(self) -> torch.dtype:
        return self.decoder.weight.dtype

    def encode(self, inputs: torch.Tensor) -> torch.Tensor:
        """(B L d_in) in the model's dtype, or (B L) integer token ids -> (B L H)"""
        cfg = self.config
        if not isinstance(inputs, torch.Tensor):
            raise LinrnnError(f"input: expected a tensor, found {type(inputs).__name__}")
        if cfg.vocab_size is not None:
            if inputs.is_floating_point() or inputs.is_complex() or inputs.ndim != 2 or 0 in inputs.shape:
                raise LinrnnError(f"input: expected integer token ids of shape (B, L), found {inputs.dtype} "
                                  f"{tuple(inputs.shape)}")
            if inputs.min() < 0 or inputs.max() >= cfg.vocab_size:
                raise LinrnnError(f"input: expected token ids in [0, {cfg.vocab_size}), found ids in "
                                  f"[{int(inputs.min())}, {int(inputs.max())}]")
        elif inputs.ndim != 3 or inputs.shape[-1] != cfg.d_input or 0 in inputs.shape or inputs.dtype != self.dtype:
            raise LinrnnError(f"input: expected shape (B, L, {cfg.d_input}) and dtype {self.dtype}, found "
                              f"{tuple(inputs.shape)} {inputs.dtype}")
        return self.encoder(inputs)

    def pool(self, x: torch.Tensor, lengths: torch.Tensor) -> torch.Tensor:
        """(B L H) -> (B H) for 'mean' (valid positions only) and 'last' (last valid position); 'none' keeps (B L H)."""
        how = self.config.pooling
        if how == "none":
            return x
        if how == "last":
            return x[torch.arange(x.shape[0], device=x.device), lengths - 1]
        valid = torch.arange(x.shape[1], device=x.device)[None, :] < lengths[:, None]     # (B L)
        acc = torch.float32 if x.dtype in LOW else x.dtype      # a sum over L: float32 under a low dtype
        return ((x.to(acc) * valid[..., None]).sum(dim=1) / lengths[:, None].to(acc)).to(x.dtype)

    def decode(self, z: torch.Tensor) -> torch.Tensor:
        """Pooled features -> outputs: (B H) -> (B d_out), or (B L H) -> (B L d_out) with pooling 'none'.

        Retrieval: z (2B H), the first documents then the second ones -> (B d_out).
        """
        if self.config.head == "retrieval":
            z1, z2 = z.chunk(2)                                                 # (B H) each
            z = F.gelu(self.head(torch.cat([z1, z2, z1 - z2, z1 * z2], dim=-1)))
        return self.decoder(z)

    def forward(self, inputs: torch.Tensor, lengths: torch.Tensor | None = None, mode: str = MODES[0],
                checkpoint: bool = False) -> torch.Tensor:
        """The model's output: (B d_out) with pooling, (B L d_out) with pooling 'none'.

        inputs      (B L d_in) in the model's dtype, or (B L) integer token ids with an embedding encoder;
                    with the retrieval head B = 2B' rows, the first documents then the second ones, and
                    the output is (B' d_out)
        lengths     (B,) integer valid lengths for masked mean / last pooling, or None (all full)
        mode        the mixers' view: 'scan' (default) | 'sequential' | 'conv' | 'step'; attention: 'full' | 'chunked'
        checkpoint  in training with gradients: recompute each block's activations in the backward pass
                    instead of storing them (the same numbers, including the dropout masks)
        """
        checks.check_mode(mode, "torch", self.config.mixer.kind)
        x = self.encode(inputs)                                                 # (B L H)
        B, L = x.shape[:2]
        self.config.check_rows(B)
        if lengths is None:
            lengths = torch.full((B,), L, dtype=torch.int64, device=x.device)
        elif (not isinstance(lengths, torch.Tensor) or lengths.shape != (B,) or lengths.is_floating_point()
              or lengths.min() < 1 or lengths.max() > L):
            raise LinrnnError(f"lengths: expected integers of shape ({B},) in [1, {L}], found {lengths!r}")
        recompute = checkpoint and self.training and torch.is_grad_enabled()
        masked = lengths if self.config.padding == "masked" and bool((lengths < L).any()) else None
        for block in self.layers:
            if recompute:
                x = recompute_in_backward(block, x, mode, masked, use_reentrant=False,
                                          context_fn=lambda b=block: (contextlib.nullcontext(),
                                                                      b.norm.frozen_statistics()))
            else:
                x = block(x, mode, masked)
        return self.decode(self.pool(x, lengths))
