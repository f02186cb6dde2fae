"""`linrnn conform`'s layer and bundles: the battery's sizes and lengths, the contracts it checks (`models`), the
configs and bundles of every check (`make_config`, `bundle_for`, `at_radius`), the contract's variants and `--set`,
and how each check is named and draws its inputs (`rng_for`, `variant_name`, `run_one`).
"""

from __future__ import annotations

import dataclasses
import itertools
import json
import zlib
from typing import Any, Mapping

import numpy as np

from linrnn.impls import specs
from linrnn.impls.config import MIXER_CONFIGS, MixerConfig, mixer_config
from linrnn.base.errors import LinrnnError
from linrnn.impls.init import init


def models() -> tuple[str, ...]:
    """The contracts: each recurrent mixer kind registered (`linrnn.impls.specs`), and the scan x_t = a_t x_{t-1} + b_t."""
    return specs.recurrent_kinds() + ("scan",)


def dtypes_for(kind: str) -> tuple[str, ...]:
    """The dtypes a target of `kind` is checked in by default: a layer's every dtype of `DTYPES`, the low ones
    included (where the target refuses one, its checks are "n/a"); the scan contract's float64 and float32 (the low
    dtypes' policy is a layer's: projections in the low dtype, the recurrence in float32)."""
    return FULL if kind == "scan" else DTYPES


DTYPES = ("float64", "float32", "bfloat16", "float16")   # every dtype of a layer's battery (`dtypes_for`)
FULL = ("float64", "float32")  # the dtypes of the whole battery; a low dtype runs the output checks (`LOW_CHECKS`)
LOW = ("bfloat16", "float16")  # the mixed-precision policy's dtypes (docs/precision.md, "Low precision")
DEFAULT_LENGTHS = (1, 7, 16)
LONG_LENGTH = 4096             # the long check: radius near 1, where float32 routes drift
LOW_LONG_LENGTH = 512          # a low dtype's long check, at most: a recurrence rounding in bf16 drifts by then
VERY_LONG_LENGTH = 2**16 + 1   # the very long check: past 2^16, where chunked kernels have skipped their tail chunk
SHORT_LENGTHS = tuple(range(1, 9))   # the short-lengths check: every length a chunked route may mishandle (L <= 8)
H, N, HEADS = 3, 4, 2          # the battery's layer: H != N, so that a transposed matrix cannot pass
BATCH = H                      # rows of every input (the impulses need H): one shape per length, so that a
                               # compiling target (JAX) compiles once per length

# The radius checks: label -> (the radii, a discretised model's steps Delta, log-uniform in the range). Every
# eigenvalue's modulus is set to each radius, phases kept, by the model's own `ModelSpec.with_radius`. Near 1 the radii
# are swept toward 1 (memories of 10^3 to 10^5 steps, where float32 routes drift and a difference 1 - r^2 cancels:
# the sweep shows its signature, `conform_hypotheses.radius_cancellation`); small: a fast decay. Small steps near 1,
# where the zero-order hold's (exp(Delta Lambda) - 1) cancels.
RADII = {"near 1": ((0.999, 0.9995, 0.9999, 0.99995, 0.99999), (1e-4, 2e-4)), "small": ((0.1,), (4.0, 6.0))}
LONG_RADIUS = 0.9999           # the long and very long checks' radius (a memory of 10^4 steps)
STEPS_NAME = "steps 1e-1 to 1e-6"   # the small-steps check of a discretised kind (`conform_spectrum.DELTAS`)
# Kinds whose output is the real part of a complex read-out: kind -> (its output matrix, the (real, imaginary)
# key pairs of that matrix, the factor before Re: 2 where the conjugate half of the modes is dropped), from each
# model's spec (`ModelSpec.readout`). Im(C x) = Re((C_im - i C_re) x) probes "the imaginary part".
COMPLEX_READOUTS = specs.SpecView(lambda s: s.readout, only=lambda s: s.readout is not None)
LAG0_DOMINANCE = 10.0   # the lag-0 error names the skip D when it is this many times the error at lags >= 1

# The discrete choices of each contract (docs/models.md), from each model's spec (`ModelSpec.variants`): the battery
# checks every combination (and each in its bidirectional form) that `--set` does not pin; the first value of each
# is the base configuration's.
VARIANTS = specs.SpecView(lambda s: s.variants)
SHORT_NAME = f"lengths {SHORT_LENGTHS[0]}-{SHORT_LENGTHS[-1]}"
SIZES = ("d_model", "d_state")   # the battery's own sizes: `--set` cannot change them
CLIPPED_RE = 0.05                # Re(Lambda) of every other S5 mode under clip_eigs, so that the clip acts


def rng_for(seed: int, check: str) -> np.random.Generator:
    """The random inputs of the check named `check`: from the seed and the name alone, so that one check run alone
    draws what it draws in the whole battery."""
    return np.random.default_rng([seed, zlib.crc32(check.encode())])


def variant_name(fields: Mapping[str, Any]) -> str:
    """A variant check's name: 'variant discretization="bilinear", bidirectional=true'."""
    return "variant " + ", ".join(f"{k}={json.dumps(v)}" for k, v in fields.items())


def run_one(battery, name: str):
    """Check `name` of `battery` (either battery: a layer's or the scan's), run once and kept; an unknown name is a
    one-line error naming the battery's checks."""
    if name not in battery.done:
        checks = {n: thunk for n, _, thunk in battery.schedule()}
        if name not in checks:
            raise LinrnnError(f"check: expected one of {', '.join(checks)}, found {name!r}")
        battery.done[name] = checks[name]()
    return battery.done[name]


def make_config(kind: str, **fields) -> MixerConfig:
    """The battery's layer of `kind` (H = 3, N = 4; RotRNN: 2 heads), with some fields set."""
    fields = {"heads": HEADS, "bidirectional": False, **fields}
    return mixer_config(kind, H, N, **fields)


def at_radius(cfg: MixerConfig, params: Mapping[str, np.ndarray], r: float) -> tuple[dict | None, str]:
    """`params` with every eigenvalue's modulus r, phases kept (the model's `ModelSpec.with_radius`), and "";
    or None and why the model's spec cannot place its decays there (no `with_radius`, or not for this config)."""
    setter = specs.spec(cfg.kind).with_radius
    if setter is None:
        return None, f"the {cfg.kind} spec has no with_radius (where its decays sit)"
    try:
        return {**params, **setter(cfg, params, r)}, ""
    except LinrnnError as err:
        return None, str(err)


def bundle_for(cfg: MixerConfig, seed: int) -> dict[str, np.ndarray]:
    """The battery's bundle of `cfg`: its initialisation, and under a config's clip_eigs (S5) every other mode with
    Re(Lambda) = CLIPPED_RE > 0, so that the clip acts (the initialisation's Re(Lambda) = -1/2 never reaches it)."""
    params = dict(init(cfg, seed).params)
    if getattr(cfg, "clip_eigs", False):
        params["Lambda_re"] = params["Lambda_re"].copy()
        params["Lambda_re"][::2] = CLIPPED_RE
    return params


def variants(kind: str, pins: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Every combination of the kind's discrete choices that `pins` leaves free, each also bidirectional; the
    first is the base configuration ({}). Each is the fields that differ from the base."""
    choices = {field: values for field, values in VARIANTS[kind].items() if field not in pins}
    if "bidirectional" not in pins:
        choices["bidirectional"] = (False, True)
    out = []
    for values in itertools.product(*choices.values()):
        out.append({f: v for (f, options), v in zip(choices.items(), values) if v != options[0]})
    return out


def parse_sets(kind: str, items) -> dict[str, Any]:
    """`--set FIELD=VALUE` items -> {field: value}; VALUE as JSON (true, 3, 0.5, null) or else a string. A field
    the kind's config does not have, or one of the battery's sizes, is a one-line error."""
    fields = {f.name for f in dataclasses.fields(MIXER_CONFIGS[kind])} - set(SIZES)
    out = {}
    for item in items or ():
        field, sep, text = item.partition("=")
        if not sep or not field:
            raise LinrnnError(f"--set: expected FIELD=VALUE, found {item!r}")
        if field not in fields:
            raise LinrnnError(f"--set: a {kind} config has no field {field!r} (expected one of "
                              f"{', '.join(sorted(fields))}; the battery's sizes {', '.join(SIZES)} are fixed)")
        try:
            out[field] = json.loads(text)
        except ValueError:
            out[field] = text
    make_config(kind, **out)                 # a bad value is the config's own one-line error
    return out


def check_lengths(lengths) -> tuple[int, ...]:
    lengths = tuple(lengths)
    if not lengths or any(isinstance(n, bool) or not isinstance(n, int) or n < 1 for n in lengths):
        raise LinrnnError(f"--lengths: expected positive integers, found {' '.join(map(str, lengths)) or 'none'}")
    return tuple(sorted(set(lengths)))
