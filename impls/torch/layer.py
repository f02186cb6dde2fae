"""What the three PyTorch mixer layers share: parameters named by bundle key, exact loading, the mode switch.

A mixer layer holds its raw parameters as real `nn.Parameter`s whose names are the bundle keys of
docs/models.md, so `named_parameters()` maps 1:1 to the bundle and `Module.double()` / `.to(float64)` are
safe (complex parameters would be skipped or lose their imaginary parts). Complex numbers appear
only inside a forward pass, in the complex dtype of the layer's precision.

    layer = LRU.from_bundle(bundle, dtype=torch.float32)       # exact copy of the float64 numbers
    y, state = layer(u, mode="scan", state=None)               # u (B L H) -> y (B L H), state after u
    y_t, state = layer.step(u_t, state)                        # u_t (B H): streaming, O(1) per position
    layer.to_bundle()                                          # back to float64 NumPy, bit for bit

States in and out follow the reference's conventions, so they compare across backends:
RotRNN (B heads N) real in the original basis; LRU (B N) complex; DLR (B H N) complex.
"""

from __future__ import annotations

from typing import Any, ClassVar, Mapping

import numpy as np
import torch
from torch import nn

from linrnn.impls import checks
from linrnn.impls.bundle import RECURRENCE_KEYS, Bundle, check_compute_range, expected_shapes, mixer_shapes
from linrnn.impls.config import DTYPES, LOW_DTYPES, STATE_DTYPE
from linrnn.base.errors import LinrnnError
from linrnn.impls.segments import check_packing, pieces, starts
from linrnn.impls.specs.base import MODES as _MODES

MODES = _MODES["torch"]                                  # the first is the default
TORCH_DTYPES = {name: getattr(torch, name) for name in DTYPES["torch"]}
LOW = tuple(TORCH_DTYPES[name] for name in LOW_DTYPES)   # the mixed-precision dtypes: the recurrence in STATE_DTYPE


def torch_dtype(dtype: Any) -> torch.dtype:
    """torch.float32 / float64 / bfloat16 / float16 from a torch dtype or its name; anything else is a LinrnnError."""
    if isinstance(dtype, torch.dtype) and dtype in TORCH_DTYPES.values():
        return dtype
    name = dtype if isinstance(dtype, str) else str(dtype).removeprefix("torch.")
    return TORCH_DTYPES[checks.check_dtype(name, "torch")]


def autocast_dtype(device: torch.device) -> torch.dtype | None:
    """The dtype autocast is on with for `device` (bf16 by the GPU policy), or None when it is off."""
    return torch.get_autocast_dtype(device.type) if torch.is_autocast_enabled(device.type) else None


def check_mode(mode: str) -> str:
    return checks.check_mode(mode, "torch")


# -- exact loading: the bundle's keys are the module's state_dict keys --------------------------

def load_bundle(module: nn.Module, bundle: Bundle) -> None:
    """Copy every array of `bundle` into the parameter or buffer of the same name (exact in float64)."""
    state = module.state_dict(keep_vars=True)
    if set(state) != set(bundle.params):          # a programming error: the module was built from this config
        raise RuntimeError(f"module keys {sorted(state)} != bundle keys {sorted(bundle.params)}")
    with torch.no_grad():
        for key, array in bundle.params.items():
            state[key].copy_(torch.from_numpy(np.array(array)))


def export_bundle(module: nn.Module, config) -> Bundle:
    """A float64 NumPy bundle of the module's current parameters and buffers (a copy)."""
    state = module.state_dict()
    return Bundle(config, {key: state[key].detach().cpu().to(torch.float64).numpy().copy()
                           for key in expected_shapes(config)})


def round_to(module: nn.Module, keys, dtype: torch.dtype) -> None:
    """Round the parameters `keys` of `module` to the values of the low `dtype` (as float32 master weights are
    cast for a low-precision product), keeping their own dtype."""
    with torch.no_grad():
        for key in keys:
            p = getattr(module, key)
            p.copy_(p.to(torch.float32).to(dtype))


def real_parameters(module: nn.Module, shapes: Mapping[str, tuple[int, ...]], dtype: torch.dtype,
                    device) -> None:
    """Register one real parameter per bundle key (zeros until `load_bundle`)."""
    for key, shape in shapes.items():
        module.register_parameter(key, nn.Parameter(torch.zeros(shape, dtype=dtype, device=device)))


# -- the layer ----------------------------------------------------------------------------------

class Mixer(nn.Module):
    """Base of `RotRNN`, `LRU`, `DLR`: subclasses provide `materialise`, the four views and the state converters.

    A subclass defines
        materialise()                       -> m, the derived tensors of one forward pass (the equations' terms)
        sequential / scan / conv(m, u, x0)  -> (y (B L H), native final state)
        step_once(m, u_t, x)                -> (y_t (B H), native state)
        to_native(m, state, batch)          -> native state, from the reference's convention (checked)
        from_native(m, x)                   -> the reference's convention
        zero_state(m, batch)                -> the native zero state
    (the JAX side's mixers name their conversions the same: `to_native`, `from_native`)
    """

    config_type: ClassVar[type]
    # Modes whose projections run in the autocast dtype when autocast is on (the recurrence stays in the
    # layer's dtype, docs/precision.md, "Mixed precision"); every other mode runs wholly in the layer's dtype.
    autocast_modes: ClassVar[tuple[str, ...]] = ()
    # Modes whose view takes `final_state=False` and then does not form the final state, where forming it
    # costs work and memory (DLR's `conv`: one more product over the whole input); every other view forms
    # it anyway and `forward(..., final_state=False)` only drops it.
    optional_state_modes: ClassVar[tuple[str, ...]] = ()
    # Modes that `torch.compile` does not trace: inside a compiled function the whole call runs eagerly (a graph
    # break on each side), because tracing it fails in PyTorch itself (docs/precision.md, "Compiled paths").
    eager_modes: ClassVar[tuple[str, ...]] = ()
    # Whether the views take `lengths=` (a (B,) tensor or None): a layer whose backward scan begins differently from
    # how it continues (RG-LRU: a sequence's first input enters unnormalised) must know where each padded row ends;
    # every other layer needs only its input zeroed at the padding
    views_take_lengths: ClassVar[bool] = False

    @property
    def recurrence_keys(self) -> tuple[str, ...]:
        """The raw parameters of the recurrence (own optimiser group): `linrnn.impls.bundle.RECURRENCE_KEYS`."""
        return RECURRENCE_KEYS[self.config.kind]

    def __init__(self, bundle: Bundle, dtype: torch.dtype = torch.float64, device=None):
        super().__init__()
        if not isinstance(bundle.config, self.config_type):
            raise LinrnnError(f"bundle: expected a {self.config_type.__name__} layer bundle, "
                              f"found {type(bundle.config).__name__}")
        self.config = bundle.config
        dtype = torch_dtype(dtype)
        # a low dtype (docs/precision.md, "Low precision"): the input and output in it, the parameters in float32
        # with the projections' (every key outside the recurrence's) rounded to the low dtype's values
        self.io_dtype = dtype if dtype in LOW else None
        check_compute_range(self.config, bundle.params,
                            STATE_DTYPE if self.io_dtype else str(dtype).removeprefix("torch."))
        real_parameters(self, mixer_shapes(self.config), TORCH_DTYPES[STATE_DTYPE] if self.io_dtype else dtype, device)
        load_bundle(self, bundle)
        if self.io_dtype is not None:
            round_to(self, [k for k in mixer_shapes(self.config) if k not in self.recurrence_keys], self.io_dtype)

    @classmethod
    def from_bundle(cls, bundle: Bundle, dtype: torch.dtype = torch.float64, device=None) -> "Mixer":
        """The layer holding `bundle`'s numbers in `dtype` on `device` (None: PyTorch's default device)."""
        return cls(bundle, dtype, device)

    def to_bundle(self) -> Bundle:
        return export_bundle(self, self.config)

    @property
    def dtype(self) -> torch.dtype:
        return self.D.dtype

    # -- checks of user inputs ----------------------------------------------------------------

    def check_input(self, u: torch.Tensor, ndim: int = 3) -> None:
        H = self.config.d_model
        shape = "(B, L, H)" if ndim == 3 else "(B, H)"
        if not isinstance(u, torch.Tensor):
            raise LinrnnError(f"input: expected a tensor of shape {shape} with H = {H}, found {type(u).__name__}")
        if u.ndim != ndim or u.shape[-1] != H or 0 in u.shape:
            raise LinrnnError(f"input: expected shape {shape} with H = {H} and no empty dimension, "
                              f"found {tuple(u.shape)}")
        own = self.io_dtype or self.dtype
        if u.dtype != own and u.dtype != autocast_dtype(u.device):
            raise LinrnnError(f"input: expected dtype {own} (the layer's), found {u.dtype}")

    def check_state(self, state: torch.Tensor, shape: tuple[int, ...], dtype: torch.dtype) -> None:
        if not isinstance(state, torch.Tensor) or tuple(state.shape) != shape or state.dtype != dtype:
            found = (f"{tuple(state.shape)} {state.dtype}" if isinstance(state, torch.Tensor)
                     else type(state).__name__)
            raise LinrnnError(f"state: expected a tensor of shape {shape} and dtype {dtype}, found {found}")

    def check_streaming(self, mode: str, state) -> None:
        checks.check_streaming(self.config, mode, state is not None)

    def check_view(self, mode: str, length: int, state) -> None:
        """Refuse a view that does not compute this layer's definition (DLR with a truncated kernel)."""
        checks.check_kernel_view(self.config, mode, length, state is not None)

    def check_packing(self, u: torch.Tensor, lengths, segments, state):
        """-> (lengths as a (B,) int64 tensor on u's device or None, segments as (B L) int64 NumPy or None)."""
        to_numpy = lambda x: x.detach().cpu().numpy() if isinstance(x, torch.Tensor) else x
        if isinstance(lengths, torch.Tensor) and lengths.is_floating_point():
            raise LinrnnError(f"lengths: expected integers of shape ({u.shape[0]},), found {lengths.dtype}")
        lengths, segments = check_packing(to_numpy(lengths), to_numpy(segments), state is not None, *u.shape[:2])
        return (None if lengths is None else torch.as_tensor(lengths, device=u.device)), segments

    # -- padded rows and packed sequences (docs/models.md, "Padding and packed sequences") ------------

    def per_segment(self, u: torch.Tensor, mode: str, segments) -> torch.Tensor:
        """Packed sequences as one padded batch of their segments (`linrnn.impls.segments.pieces`), each row run with
        its length, every position put back.     u (B L H), segments (B L) NumPy -> y (B L H)"""
        B, L, H = u.shape
        p = pieces(segments)
        index = torch.as_tensor(p.index, device=u.device)
        rows, _ = self(u.reshape(B * L, H)[index], mode, final_state=False,
                       lengths=torch.as_tensor(p.lengths, device=u.device))                 # (R Lmax H)
        return rows.reshape(-1, H)[torch.as_tensor(p.inverse.ravel(), device=u.device)].view(B, L, H)

    # -- the mode switch ----------------------------------------------------------------------

    def forward(self, u: torch.Tensor, mode: str = MODES[0], state: torch.Tensor | None = None,
                final_state: bool = True, lengths: torch.Tensor | None = None, segments=None):
        """The layer on a whole sequence in the chosen view.

        u            (B L H) in the layer's dtype
        mode         'scan' (default) | 'sequential' | 'conv' | 'step'
        state        the forward state before u in the reference's convention, or None (zeros)
        final_state  False: the caller drops the state after u, so a view that can skip forming it does
                     (`optional_state_modes`); y is the same either way
        lengths      (B,) integers or None: padded rows, each row's valid part computed as if alone (its
                     input zeroed at the padding, so no scan carries the padding in), the output 0 at the padding
        segments     (B L) integer ids or None: packed sequences, each computed as if alone (`step` resets its
                     state where the id changes; the other modes run the segments as one padded batch)
        -> y (B L H), the forward state after u (None for bidirectional or truncated-kernel layers, with lengths
           or segments, or when final_state is False)
        """
        if mode in self.eager_modes and torch.compiler.is_compiling():
            return _eager_forward(self, u, mode, state, final_state, lengths, segments)
        checks.check_mode(mode, "torch", self.config.kind)          # a kind's own modes (the RG-LRU: no conv)
        self.check_input(u)
        self.check_streaming(mode, state)
        self.check_view(mode, u.shape[1], state)
        lengths, segments = self.check_packing(u, lengths, segments, state)
        if segments is not None and mode != "step":
            return self.per_segment(u, mode, segments), None
        amp = autocast_dtype(u.device)
        with torch.autocast(u.device.type, dtype=amp or torch.bfloat16, enabled=amp is not None and mode in self.autocast_modes):
            u = u.to(self.dtype)                                       # a bf16 input under autocast: the layer's dtype
            valid = None if lengths is None else padding_mask(lengths, u.shape[1])             # (B L 1)
            if valid is not None:                                      # where, not a product: inf * 0 is NaN
                u = torch.where(valid, u, torch.zeros((), dtype=u.dtype, device=u.device))
            m = self.materialise()
            x0 = None if state is None else self.to_native(m, state, u.shape[0])
            if mode == "step":
                resets = None if segments is None else torch.as_tensor(starts(segments), device=u.device)
                y, x = self.stepwise(m, u, x0, resets)
            elif not final_state and mode in self.optional_state_modes:
                y, x = getattr(self, mode)(m, u, x0, final_state=False)
            else:
                extra = {"lengths": lengths} if self.views_take_lengths else {}
                y, x = getattr(self, mode)(m, u, x0, **extra)
        if valid is not None:
            y = torch.where(valid, y, torch.zeros((), dtype=y.dtype, device=y.device))
        if self.io_dtype is not None:
            y = y.to(self.io_dtype)                                    # the output in the low dtype, the state not
        if x is None or self.config.bidirectional or not final_state or lengths is not None or segments is not None:
            return y, None
        return y, self.from_native(m, x)

    def stepwise(self, m, u: torch.Tensor, x0, resets: torch.Tensor | None = None):
        """Mode 'step' on a whole sequence: `step_once` at every position (projections included); the state
        restarts from zero where `resets` (B L) is True (a packed segment begins)."""
        zero = self.zero_state(m, u.shape[0])
        x = zero if x0 is None else x0
        ys = []
        for t in range(u.shape[1]):
            if resets is not None:
                x = torch.where(resets[:, t].view(-1, *[1] * (x.ndim - 1)), zero, x)
            y_t, x = self.step_once(m, u[:, t], x)
            ys.append(y_t)
        return torch.stack(ys, dim=1), x

    def step(self, u_t: torch.Tensor, state: torch.Tensor | None = None):
        """Streaming inference: one position, explicit state in and out, O(1) work in the position.

        u_t    (B H) in the layer's dtype
        state  the state before u_t (reference convention), or None (zeros)
        -> y_t (B H), the state after u_t
        """
        self.check_input(u_t, ndim=2)
        self.check_streaming("step", state)
        self.check_view("step", 1, state)
        m = self.materialise()
        x = self.zero_state(m, u_t.shape[0]) if state is None else self.to_native(m, state, u_t.shape[0])
        y_t, x = self.step_once(m, u_t.to(self.dtype), x)
        return (y_t if self.io_dtype is None else y_t.to(self.io_dtype)), self.from_native(m, x)

    def extra_repr(self) -> str:
        io = "" if self.io_dtype is None else f", input and output {self.io_dtype}"
        return f"{self.config}, dtype={self.dtype}{io}"


_eager_forward = torch.compiler.disable(   # `Mixer.eager_modes` under torch.compile
    Mixer.forward, reason="a mode in Mixer.eager_modes, which PyTorch fails to compile (docs/precision.md)")


def padding_mask(lengths: torch.Tensor, length: int) -> torch.Tensor:
    """(B L 1) bool: True at the valid positions t < lengths[b]."""
    return (torch.arange(length, device=lengths.device)[None, :] < lengths[:, None])[..., None]


def recurrence_parameters(module: nn.Module) -> list[nn.Parameter]:
    """The recurrence parameters (`linrnn.impls.bundle.RECURRENCE_KEYS`) of every mixer inside `module`."""
    return [getattr(m, key) for m in module.modules() if isinstance(m, Mixer) for key in m.recurrence_keys]


def parameter_groups(module: nn.Module) -> dict[str, list[nn.Parameter]]:
    """{'recurrence': [...], 'other': [...]}: docs/models.md trains the recurrence with its own rate, no weight decay.

        groups = parameter_groups(model)
        torch.optim.AdamW([{"params": groups["recurrence"], "lr": 1e-3, "weight_decay": 0.0},
                           {"params": groups["other"], "lr": 4e-3}])
    """
    recurrence = recurrence_parameters(module)
    ids = {id(p) for p in recurrence}
    return {"recurrence": recurrence, "other": [p for p in module.parameters() if id(p) not in ids]}
