"""`linrnn conform`: check an implementation written elsewhere against the reference, and name each deviation.

    linrnn conform TARGET --model lru|rotrnn|dlr|... [--dtype float32|float64] [--lengths L ...] [--seed S]
                   [--json FILE]

TARGET is `module:function` (importable from PYTHONPATH or the working directory) or a built-in name
(`BUILTINS`: the published peers, `lru-pytorch`, `s5-pytorch`, `lrnnx`, the scans, `mamba-ssm` where it is
installed, and `linrnn-torch` / `linrnn-jax`, the project's own layers). The protocol (docs/conform.md):

    function(bundle, config[, dtype=...]) -> call
        bundle  {key: float64 array}: a layer bundle's keys (docs/models.md), no prefixes
        config  the bundle's config as a plain dict (`linrnn.impls.config.config_to_dict`)
        dtype   'float64' | 'float32', passed only to a function that has a `dtype` parameter
        raises NotImplementedError for a config it does not support (e.g. bidirectional): "n/a", not a failure
    call(u) -> y                          u (B L H) float64 NumPy; y (B L H), anything numpy.asarray takes
    call(u, state=s) -> (y, state)        when `call` has a `state` parameter; s = None starts from zeros and
                                          the state returned is opaque: it is only passed back

The battery, for each dtype (the target's own output compared with the float64 reference's, with the
tolerance table of `linrnn.base.tolerance`, never a looser one):

    impulse      one impulse per input channel: the impulse responses at lag 0 and at lags >= 1, each on its
                 own scale (a large skip D u cannot hide the recurrence)
    random L=..  random inputs at each length (L = 1 and an odd L by default)
    radius ..    the bundle re-initialised with decay radii near 1 and small (the config's init fields): the
                 impulse responses and a random input
    bidirectional  the bundle re-initialised with `bidirectional`, where the kind has one
    state        a sequence split over two calls, the state passed on, against the target's own single call
    gradient     where the call differentiates (a torch tensor or a JAX array in, a gradient out): the input
                 gradient of <w, y> against the reference's J^T w (exact: the layer is linear in u, and J is
                 the reference's response to unit impulses)

A failed check is explained by probes, never by the target's name (`Diagnosis`): the lag-0 error of the
impulse responses (the skip D), fits of the recurrent part to the contract's output scaled or to its
imaginary part, the error level of a float64 run, the target's own single-call and zero-state outputs
(the state), its own forward-only layer (the backward direction), and its output check (the gradient).
From Python: `run` (every check, as the command), `battery(target, kind, dtype, ...)` whose `one(name)` runs one check
alone and `plan` (the checks' names, nothing built or run): `linrnn.testing` makes a pytest case of each. Each check
draws its random inputs from the seed and its own name (`rng_for`), so a check run alone sees what it sees in the
whole battery.
The parts, one job each: the built-in targets (`conform_targets.py`), the target protocol's side (`conform_layer.py`),
the battery's layer, bundles and names (`conform_bundles.py`), the reference's measurements (`conform_reference.py`),
the results (`conform_results.py`), the battery (`conform_battery.py`, its checks in `conform_outputs.py`,
`conform_bidirectional.py`, `conform_state.py`, `conform_gradients.py`), the diagnoses (`conform_diagnoses.py`,
`conform_spectrum.py`), the scan contract (`conform_scan.py`) and the command line (`conform_cli.py`). This module
gathers their public names, so `from linrnn.verify.conform import run, Result, PEERS, ...` keeps working.
Exit status: 0 conforms, 1 deviates, 2 bad input (a one-line `LinrnnError`: an unimportable target, one that
is not callable, an output of the wrong shape, a complex output, NaN or Inf).
"""

from __future__ import annotations

from linrnn.verify import conform_hypotheses as hypotheses  # noqa: F401 (the named hypotheses)
from linrnn.verify import conform_scan as scan  # noqa: F401 (the scan battery, as `conform.scan`)
from linrnn.verify import conform_spectrum as spectrum  # noqa: F401
from linrnn.verify.conform_battery import Battery, Planned, battery, plan, run
from linrnn.verify.conform_bundles import (BATCH, CLIPPED_RE, COMPLEX_READOUTS, DEFAULT_LENGTHS, DTYPES, FULL, HEADS,
                                           LAG0_DOMINANCE, LONG_LENGTH, LONG_RADIUS, LOW, RADII, SHORT_LENGTHS,
                                           SHORT_NAME, SIZES, STEPS_NAME, VARIANTS, VERY_LONG_LENGTH, H, N, at_radius,
                                           bundle_for, check_lengths, dtypes_for, make_config, models, parse_sets,
                                           rng_for, run_one, variant_name, variants)
from linrnn.verify.conform_cli import register
from linrnn.verify.conform_diagnoses import FLOAT32_FLOOR, explain_state, factor_diagnosis, float32_level, follows
from linrnn.verify.conform_layer import (GRADIENT_PROBES, Layer, as_array, check_output, describe, differentiate,
                                         input_gradient, parameter_gradient, state_gradient, state_like)
from linrnn.verify.conform_reference import (fit_factor, imaginary_readout, impulses, readout, reference,
                                             reference_gradient, rel_error)
from linrnn.verify.conform_results import (CONFORMS, DEVIATES, EXCLUSIVE, FLOAT32_ONLY, VERDICTS, Check, Diagnosis,
                                           Result, format_result, judge, merged)
from linrnn.verify.conform_targets import (BUILTINS, OWN, PEERS, STORED_FINDINGS, TRITON_FIRST, PeerInfo,
                                           format_peers, installed_version, own_models, peers_table, resolve,
                                           stored_verdict, unavailable)
from linrnn.impls.reference import spectral_radius

# every name above, the module's public API (`from linrnn.verify.conform import ...`)
__all__ = ["as_array", "at_radius", "BATCH", "Battery", "battery", "BUILTINS", "bundle_for", "Check",
           "check_lengths", "check_output", "CLIPPED_RE", "COMPLEX_READOUTS", "CONFORMS", "DEFAULT_LENGTHS",
           "describe", "DEVIATES", "Diagnosis", "differentiate", "DTYPES", "dtypes_for", "EXCLUSIVE",
           "explain_state", "factor_diagnosis", "fit_factor", "FLOAT32_FLOOR", "float32_level", "FLOAT32_ONLY",
           "follows", "format_peers", "format_result", "FULL", "GRADIENT_PROBES", "H", "HEADS", "hypotheses",
           "imaginary_readout", "impulses", "input_gradient", "installed_version", "judge", "LAG0_DOMINANCE",
           "Layer", "LONG_LENGTH", "LONG_RADIUS", "LOW", "make_config", "merged", "models", "N", "OWN", "own_models",
           "parameter_gradient", "parse_sets", "PeerInfo", "PEERS", "peers_table", "plan", "Planned", "RADII",
           "readout", "reference", "reference_gradient", "register", "rel_error", "resolve", "Result", "rng_for",
           "run", "run_one", "scan", "SHORT_LENGTHS", "SHORT_NAME", "SIZES", "spectral_radius", "spectrum",
           "state_gradient", "state_like", "STEPS_NAME", "STORED_FINDINGS", "stored_verdict", "TRITON_FIRST",
           "unavailable", "variant_name", "variants", "VARIANTS", "VERDICTS", "VERY_LONG_LENGTH"]
