"""`linrnn conform`'s built-in targets: the published peers and this project's own adapters, where each lives, what
each checks and where its code came from (docs/conform.md, "Built-in targets"), and `resolve` (a built-in name or
`module:function` -> the build function).

The adapters live on the framework sides (`conform_torch.py`, `conform_peers_torch.py`, `conform_jax.py`) and are
imported only when named, so this module imports neither framework (docs/architecture.md, "The layers"). A new target
is one row of `BUILTINS` and, for a published one, of `PEERS`.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import sys
from dataclasses import dataclass
from typing import Any, Callable

from linrnn.impls import specs
from linrnn.base.errors import LinrnnError
from linrnn.base.results import STORED_DIR, ConformRecord, ResultsError, read
from linrnn.verify.conform_layer import _why
from linrnn.verify.conform_results import judge

# The peers' stored findings (`linrnn conform NAME --model KIND --json STORED_FINDINGS/NAME--KIND.json`), which
# `--peers` and the report show wherever a peer does not run
STORED_FINDINGS = STORED_DIR / "conform"

# Built-in targets: name -> (module, function). The modules live on the framework sides and are imported
# only when named, so this module imports neither framework (docs/architecture.md, "The layers").
BUILTINS: dict[str, tuple[str, str]] = {
    "lru-pytorch": ("linrnn.verify.conform_torch", "lru_pytorch"),
    "s5-pytorch": ("linrnn.verify.conform_torch", "s5_pytorch"),
    "lrnnx": ("linrnn.verify.conform_peers_torch", "lrnnx"),
    "accelerated-scan": ("linrnn.verify.conform_peers_torch", "accelerated_scan"),
    "accelerated-scan-ref": ("linrnn.verify.conform_peers_torch", "accelerated_scan_ref"),
    "torch-associative-scan": ("linrnn.verify.conform_peers_torch", "torch_associative_scan"),
    "recurrentgemma": ("linrnn.verify.conform_jax", "recurrentgemma"),
    "mamba-ssm-ref": ("linrnn.verify.conform_peers_torch", "mamba_ssm_ref"),
    "mamba-ssm": ("linrnn.verify.conform_peers_torch", "mamba_ssm"),
    "fla-hgrn-naive": ("linrnn.verify.conform_peers_torch", "fla_hgrn_naive"),
    "fla-hgrn": ("linrnn.verify.conform_peers_torch", "fla_hgrn"),
    "mambapy": ("linrnn.verify.conform_peers_torch", "mambapy"),
    "linrnn-torch": ("linrnn.verify.conform_torch", "linrnn_torch"),
    "linrnn-jax": ("linrnn.verify.conform_jax", "linrnn_jax"),
    "linrnn-torch-scan": ("linrnn.verify.conform_peers_torch", "linrnn_torch_scan"),
    "linrnn-jax-scan": ("linrnn.verify.conform_jax", "linrnn_jax_scan"),
    # RecurrentGemma's RG-LRU layers, the rglru contract (`conform_recurrentgemma.py` says how a bundle goes in)
    "recurrentgemma-rglru-torch": ("linrnn.verify.conform_recurrentgemma_torch", "recurrentgemma_rglru_torch"),
    "recurrentgemma-rglru-jax": ("linrnn.verify.conform_recurrentgemma_jax", "recurrentgemma_rglru_jax"),
    "recurrentgemma-rglru-jax-assoc": ("linrnn.verify.conform_recurrentgemma_jax", "recurrentgemma_rglru_jax_assoc"),
    "recurrentgemma-rglru-jax-pallas": ("linrnn.verify.conform_recurrentgemma_jax", "recurrentgemma_rglru_jax_pallas"),
}


@dataclass(frozen=True)
class PeerInfo:
    distribution: str           # the package on PyPI (the `[peers]` extra), or "" for the project's own
    module: str                 # its import name
    models: tuple[str, ...]     # the contracts its adapter implements
    what: str                   # what is checked
    lineage: str                # where its code came from, and which other built-in targets share it


# The published implementations (docs/conform.md, "Built-in targets"). Two targets whose code shares an origin
# are not two independent checks: `lineage` says so.
PEERS: dict[str, PeerInfo] = {
    "lru-pytorch": PeerInfo("LRU-pytorch", "LRU_pytorch", ("lru",), "its `LRU`",
                            "written from the LRU paper's pseudo-code; shares no code with the other targets"),
    "s5-pytorch": PeerInfo("s5-pytorch", "s5", ("s5", "lru"), "its `S5`",
                           "a port of the authors' JAX S5 (lindermanlab/S5, via kavorite/S5); its initialisation "
                           "from annotated-s4"),
    "lrnnx": PeerInfo("lrnnx", "lrnnx", ("lru", "s5"), "`lrnnx.models.lti` `LRU`, `S5`",
                      "its own LTI layers over one FFT convolution (`opt_ssm_forward`) and one table of "
                      "discretisations (`lrnnx.core.discretization`) shared by its LRU and S5; its S4/S4D "
                      "kernels are taken from state-spaces/s4"),
    "accelerated-scan": PeerInfo("accelerated-scan", "accelerated_scan", ("scan",),
                                 "`accelerated_scan.scalar.scan` (real) and `.complex.scan` (Triton, forward "
                                 "only; TRITON_INTERPRET=1 on the CPU)",
                                 "one package with accelerated-scan-ref, which is written to check these kernels"),
    "accelerated-scan-ref": PeerInfo("accelerated-scan", "accelerated_scan", ("scan",),
                                     "`accelerated_scan.ref.scan`, its torch tree scan (forward and reverse)",
                                     "the reference of accelerated-scan's kernels, same package: a different "
                                     "algorithm (Blelloch's tree), the same author"),
    "torch-associative-scan": PeerInfo("torch", "torch", ("scan",),
                                       "`torch._higher_order_ops.associative_scan` (combine_mode 'generic' on the "
                                       "CPU)", "PyTorch's own; shares no code with the other targets"),
    "recurrentgemma": PeerInfo("recurrentgemma", "recurrentgemma", ("scan",),
                               "`recurrentgemma.jax.scan.linear_scan` (JAX, its native linear scan on the CPU)",
                               "Google DeepMind's Griffin code; its PyTorch `rnn_scan` is a port of this one (not "
                               "a target of the scan contract; its RG-LRU layer is, recurrentgemma-rglru-torch); the "
                               "scan under recurrentgemma-rglru-jax"),
    "mamba-ssm-ref": PeerInfo("mamba-ssm", "mamba_ssm", ("scan",),
                              "`mamba_ssm.ops.selective_scan_interface.selective_scan_ref` (PyTorch, one position at "
                              "a time; float32 only)",
                              "the reference mamba-ssm tests its fused kernel against: one package with mamba-ssm, "
                              "same authors (Tri Dao, Albert Gu), another algorithm; lrnnx's "
                              "`lrnnx.ops.selective_scan` (not a target) is modified from this file"),
    "mamba-ssm": PeerInfo("mamba-ssm", "mamba_ssm", ("scan",),
                          "`selective_scan_fn`, mamba-ssm's fused CUDA kernel (float32 only, on a CUDA device)",
                          "one package with mamba-ssm-ref, written to check this kernel"),
    "fla-hgrn-naive": PeerInfo("fla-core", "fla", ("scan",),
                               "`fla.ops.hgrn.naive.naive_recurrent_hgrn`, HGRN's reference loop (real decays "
                               "exp(g_t); float32 only)",
                               "flash-linear-attention's (fla-org) reference its HGRN kernels are tested against: one "
                               "package with fla-hgrn"),
    "fla-hgrn": PeerInfo("fla-core", "fla", ("scan",),
                         "`fla.ops.hgrn.fused_recurrent_hgrn`, HGRN's fused Triton kernel (float32 only; Triton's "
                         "interpreter on the CPU)",
                         "one package with fla-hgrn-naive, written to check this kernel; its `chunk_hgrn` is not a "
                         "target: Triton 3.9's interpreter fails on it (InterpreterError: mask has unsupported dtype)"),
    "mambapy": PeerInfo("mambapy", "mambapy", ("scan",),
                        "`mambapy.pscan.pscan`, a Blelloch scan in PyTorch, the length padded to a power of two",
                        "alxndrTL/mamba.py: written apart from mamba-ssm (its scan is its own; its Mamba block follows "
                        "mamba-ssm's selective_scan_ref); shares no code with the other targets"),
    "recurrentgemma-rglru-torch": PeerInfo("recurrentgemma", "recurrentgemma", ("rglru",),
                                           "`recurrentgemma.torch.layers.RGLRU` (its `rnn_scan` accumulates in "
                                           "float32), entered without the package's JAX `__init__`",
                                           "Google DeepMind's Griffin code: the PyTorch port of its JAX layer "
                                           "(recurrentgemma-rglru-jax), one package; this project's rglru is written "
                                           "from the paper's equations and the package's initialisation, not its "
                                           "code"),
    "recurrentgemma-rglru-jax": PeerInfo("recurrentgemma", "recurrentgemma", ("rglru",),
                                         "`recurrentgemma.jax.layers.RGLRU` (flax), scan_type AUTO: its native "
                                         "`lax.scan` off a TPU, accumulating in float32",
                                         "Google DeepMind's Griffin code, the layer its checkpoints were trained "
                                         "with; its scan is the recurrentgemma target's `linear_scan`; its "
                                         "only_real=False setting is another model (a complex state of H/2 lanes), "
                                         "not a target"),
    "recurrentgemma-rglru-jax-assoc": PeerInfo("recurrentgemma", "recurrentgemma", ("rglru",),
                                               "the same layer, scan_type ASSOCIATIVE_NATIVE "
                                               "(`lax.associative_scan`)",
                                               "one package with recurrentgemma-rglru-jax: the same layer, another "
                                               "scan"),
    "recurrentgemma-rglru-jax-pallas": PeerInfo("recurrentgemma", "recurrentgemma", ("rglru",),
                                                "the same layer, scan_type LINEAR_PALLAS (its Pallas kernel: a TPU "
                                                "or GPU only)",
                                                "one package with recurrentgemma-rglru-jax: the same layer, its "
                                                "Pallas scan"),
}
# The module that sets TRITON_INTERPRET=1 (no CUDA device) before triton is first imported, so that the Triton peers'
# kernels (accelerated-scan, fla-hgrn) are decorated for Triton's interpreter: imported before the other targets'
TRITON_FIRST = "linrnn.verify.conform_peers_torch"


def own_models(target: str) -> tuple[str, ...]:
    """The contracts this project's own target implements: every recurrent model registered (its spec), or the scan."""
    return ("scan",) if target.endswith("-scan") else specs.recurrent_kinds()


OWN = ("linrnn-torch", "linrnn-jax", "linrnn-torch-scan", "linrnn-jax-scan")


def resolve(target: str) -> Callable:
    """The build function of `target`: a built-in name or `module:function`."""
    if target in BUILTINS:
        reason = unavailable(target)
        if reason:
            raise LinrnnError(reason)
        module_name, function = BUILTINS[target]
        return getattr(importlib.import_module(module_name), function)
    if ":" not in target:
        raise LinrnnError(f"target: expected module:function or one of {', '.join(BUILTINS)}, found {target!r}")
    module_name, _, function = target.rpartition(":")
    if os.getcwd() not in sys.path:            # the working directory, after everything else on the path
        sys.path.append(os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except Exception as err:                   # the user's module may fail in any way while importing
        raise LinrnnError(f"target {target}: cannot import {module_name!r} "
                          f"({_why(err)})") from None
    if not hasattr(module, function):
        raise LinrnnError(f"target {target}: module {module_name!r} has no attribute {function!r}")
    build = getattr(module, function)
    if not callable(build):
        raise LinrnnError(f"target {target}: expected a function(bundle, config), found {type(build).__name__}")
    return build


def unavailable(name: str) -> str | None:
    """Why built-in target `name` cannot run here (its framework or package missing), or None."""
    module_name, _ = BUILTINS[name]
    try:
        module = importlib.import_module(module_name)
    except ImportError as err:
        return f"target {name}: its framework is not installed ({err})"
    return module.missing_reason(name) if name in PEERS else None


def installed_version(distribution: str) -> str | None:
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None


def peers_table() -> list[dict[str, Any]]:
    """Every built-in target: name, contracts, package and version (or why it cannot run here), lineage."""
    try:        # first: where triton is not imported yet, it chooses Triton's interpreter for the Triton peers
        importlib.import_module(TRITON_FIRST)
    except ImportError:
        pass    # no PyTorch: each target says so below
    rows = []
    for name in BUILTINS:
        info = PEERS.get(name)
        why = unavailable(name)
        if info:
            version = installed_version(info.distribution)
            rows.append({"target": name, "group": "peer", "models": list(info.models), "what": info.what,
                         "package": info.distribution, "version": version, "missing": why, "lineage": info.lineage,
                         "stored": [v for v in (stored_verdict(name, m) for m in info.models) if v]})
        else:
            rows.append({"target": name, "group": "own", "models": list(own_models(name)), "what": "this project's",
                         "package": "linrnn", "version": installed_version("linrnn"), "missing": why,
                         "lineage": "this project's code"})
    return rows


def stored_verdict(target: str, model: str) -> dict | None:
    """The verdict of `target` as `model` in its stored finding (`STORED_FINDINGS`), judged from its checks, with the
    date and the package's version it was measured with; None where there is none or it does not read."""
    try:
        record = read(STORED_FINDINGS / f"{target}--{model}.json", ConformRecord)
    except (ResultsError, OSError):
        return None
    envelope, package = record.envelope, PEERS[target].distribution if target in PEERS else "linrnn"
    return {"model": model, "verdict": judge(record.result.get("checks") or [])[0],
            "date": str(getattr(envelope, "date", "") or "")[:10],
            "version": ((getattr(envelope, "libraries", None) or {}).get(package) or "not recorded")}


def format_peers(rows: list[dict[str, Any]]) -> str:
    lines = []
    for r in rows:
        state = f"{r['package']} {r['version']}" if not r["missing"] else f"not runnable here: {r['missing']}"
        lines.append(f"{r['target']:<24} --model {'|'.join(r['models'])}: {r['what']}; {state}")
        lines.append(f"{'':<24} lineage: {r['lineage']}")
        for v in r.get("stored") or []:
            lines.append(f"{'':<24} stored verdict as {v['model']}: {v['verdict']} ({r['package']} {v['version']}, "
                         f"measured {v['date']})")
    return "\n".join(lines)
