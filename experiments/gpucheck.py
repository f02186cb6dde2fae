"""`linrnn gpucheck [--out DIR]`: everything this project wants from a lent GPU, in one budgeted command.

A GPU is lent rarely and briefly (docs/gpu.md: one H200, 15 minutes including start-up), so this is
one command that cannot stop early: six steps, in this order, each timed, each guarded (a step that
raises records its error and the next one runs), each saved as it finishes:

    environment  the GPU, its memory, driver, CUDA, torch / jax / triton / peer versions, JAX's devices
    crosscheck   `linrnn.verify.crosscheck` with torch and jax on the device, the reference on the CPU,
                 float32 and float64, at the matrix's shapes: pass/fail counts, worst error / tolerance
    kernels      `triton_scan.scan` against `torch.scan.chunked` (outputs and gradients) and
                 `pallas_scan.scan` against `jax.scan.sequential`, both references in float64
    mamba        mamba-ssm's `selective_scan_ref` and fused CUDA `selective_scan_fn` as `linrnn conform` scan
                 targets (the scan contract's battery, float32); "skipped: ..." where mamba-ssm is not installed
    bandwidth    a device-to-device copy (GB/s, bytes read + written) and each scan's effective bandwidth,
                 2 x (B L n 2) x 4 bytes / time, as a fraction of the copy's (the H200 goal: >= 0.5)
    sweep        `linrnn.experiments.speed.sweep(device=...)` with whatever budget is left

The plain device code runs first and the new kernels after it, so that a kernel that breaks the CUDA
context cannot cost the crosscheck. Budget: one deadline, `--budget-s` (default 420 s of the 8 minutes
the device script allows) after the start, checked between steps and between the parts of a step; a
step also stops at its share of the budget (`SHARES`), so the sweep is left time. What the deadline
stops is recorded as "not run: budget" (a step) or in the step's `not_run` list (its parts). A step whose
package is absent reads "skipped: <why>" or "not available: <why>" (neither is a failure).

Output: DIR/gpucheck.json, a section record of the report (`linrnn.base.results`: the envelope with the
machine and code version; section "gpucheck", device, config, data), rewritten atomically (temp file,
rename) at each step's start and end and at most every `SAVE_EVERY_S` inside one: a `timeout` that
kills the command loses only the step in flight, which then reads "running". `linrnn report --from
DIR` renders it; docs/gpu.md lists the fields.

`--device cpu` is the test path (tiny sizes, Triton under TRITON_INTERPRET=1, Pallas with
interpret=True): it runs every line of this module except the CUDA calls themselves. The kernel and
bandwidth steps, and mamba-ssm's, live in `gpukernels.py`.
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
import traceback
from importlib import import_module, metadata
from pathlib import Path

from linrnn.verify import crosscheck
from linrnn.impls import specs
from linrnn.base.errors import LinrnnError
from linrnn.base.results import Envelope, SectionRecord, command_line, now, write
from linrnn.experiments.gpukernels import (GOAL_FRACTION, KERNEL_MODULES, MAMBA_PATHS, bandwidth_step,  # noqa: F401
                                           error_line, kernel, kernels_step, mamba_step)

STEPS = ("environment", "crosscheck", "kernels", "mamba", "bandwidth", "sweep")
SHARES = {"crosscheck": 0.35, "kernels": 0.15, "mamba": 0.05, "bandwidth": 0.10}   # of the budget; the sweep: the rest
SAVE_EVERY_S = 10.0           # inside a step, the JSON is rewritten at most this often
RESERVE_S = 5.0               # kept back from the sweep's budget for the last write
CALL_BUDGET_S = {"full": 2.0, "quick": 1.0, "tiny": None}   # the sweep skips the longer L of a call slower than this
DEFAULT_OUT = "linrnn-gpucheck"
PEERS = ("s5-pytorch", "LRU-pytorch", "mamba-ssm")

# Sizes per profile: "full" (cuda), "quick" (cuda --quick), "tiny" (--device cpu, the test path).
# kernel_shapes: (B, L, n): L = 1, an odd L, a long L, and L past 2^16 (the grid's limits).
# bandwidth: (B, L, n) of the timed scans, v and the states 1 GiB each in float32 at "full": few lanes and
# a long L (a layer's scan: B N lanes), and many lanes with a short L (parallel over lanes alone, as
# Pallas is); copy_mib: the copied buffer (several times the H200's 60 MB L2); mamba: the scan battery's lengths and
# its long check (L at radius near 1).
PROFILES = {
    "full": {"crosscheck_shapes": crosscheck.DEFAULT_SHAPES, "crosscheck_kinds": specs.KINDS,
             "crosscheck_modes": crosscheck.MODES, "crosscheck_dtypes": ("float32", "float64"),
             "kernel_shapes": ((2, 1, 8), (2, 333, 16), (4, 4096, 64), (2, 65537, 32)),
             "mamba": {"lengths": (1, 7, 16), "long": 4096},
             "bandwidth": ((16, 65536, 128), (256, 4096, 128)), "copy_mib": 4096, "repeats": 10,
             "sweep": {"lengths": (1024, 4096, 16384, 65536, 262144)}},
    "quick": {"crosscheck_shapes": (crosscheck.Shape(2, 1, 3, 4, False, False),
                                    crosscheck.Shape(1, 17, 3, 4, True, True)),
              "crosscheck_kinds": specs.KINDS, "crosscheck_modes": crosscheck.MODES,
              "crosscheck_dtypes": ("float32", "float64"),
              "kernel_shapes": ((2, 1, 8), (2, 333, 16), (2, 65537, 32)),
              "mamba": {"lengths": (1, 7, 16), "long": 4096},
              "bandwidth": ((8, 16384, 128), (128, 1024, 128)), "copy_mib": 1024, "repeats": 5,
              "sweep": {"lengths": (1024, 16384)}},
    "tiny": {"crosscheck_shapes": (crosscheck.Shape(1, 5, 2, 2, False, True),), "crosscheck_kinds": ("lru",),
             "crosscheck_modes": ("scan",), "crosscheck_dtypes": ("float32",),
             "kernel_shapes": ((2, 7, 4),), "mamba": {"lengths": (1, 7), "long": 64},
             "bandwidth": ((1, 16, 2),), "copy_mib": 4, "repeats": 1,
             "sweep": {"lengths": (16,), "batch": 1, "width": 4, "state": 4, "heads": 2, "frameworks": ("torch",),
                       "mixers": ("lru",), "peers": False, "memory": False}},
}


class Budget(Exception):
    """Raised inside a step when its deadline has passed; what the step finished stays in its result."""


# -- the run: steps, deadline, saving -------------------------------------------------------------

class Run:
    """One gpucheck: the record being built, the deadline, and the writes of DIR/gpucheck.json."""

    def __init__(self, device: str, quick: bool, budget_s: float, out: str | os.PathLike | None,
                 command: str | None = None):
        self.command = command
        self.device, self.budget_s = device, float(budget_s)
        self.profile = "tiny" if device == "cpu" else ("quick" if quick else "full")
        self.sizes = PROFILES[self.profile]
        self.start = time.perf_counter()
        self.deadline = self.start + self.budget_s
        self.step_deadline = self.deadline
        self.path = None if out is None else Path(out) / "gpucheck.json"
        self.last_save = -math.inf
        self.current: dict | None = None
        self.data = {"device": device, "profile": self.profile, "budget_s": self.budget_s,
                     "goal_fraction": GOAL_FRACTION, "started": now(),
                     "steps": {name: {"status": "pending", "seconds": None, "error": None, "result": {}}
                               for name in STEPS}}

    def left(self) -> float:
        return self.step_deadline - time.perf_counter()

    def check(self) -> None:
        """Between the parts of a step: stop it (Budget) once its deadline has passed."""
        if self.left() <= 0:
            raise Budget()

    def progress(self, what: str) -> None:
        """Note what the step is doing (saved with the record, so a killed run shows where it was)."""
        if self.current is not None:
            self.current["at"] = str(what)
        if time.perf_counter() - self.last_save >= SAVE_EVERY_S:
            self.save()

    def step(self, name: str, function) -> None:
        entry = self.data["steps"][name]
        self.current = entry
        now = time.perf_counter()
        if now >= self.deadline:
            entry["status"] = "not run: budget"
            self.save()
            return
        share = SHARES.get(name)
        self.step_deadline = min(self.deadline, now + share * self.budget_s) if share else self.deadline
        entry["status"] = "running"
        self.save()
        print(f"[{now - self.start:6.1f} s] {name} ...", file=sys.stderr, flush=True)
        try:
            entry["result"] = function(self, entry["result"]) or entry["result"]
            entry["status"] = entry["result"].pop("status", "done")
        except Budget:
            entry["status"] = "partial: budget"
        except Exception as err:  # one failing step must not lose the others
            entry["status"] = f"failed: {error_line(err)}"
            entry["error"] = "".join(traceback.format_exception(type(err), err, err.__traceback__))[-4000:]
            traceback.print_exc()
        if self.device == "cuda":
            release_cuda_cache()
        entry["seconds"] = round(time.perf_counter() - now, 2)
        entry.pop("at", None)
        self.data["elapsed_s"] = round(time.perf_counter() - self.start, 2)
        self.step_deadline = self.deadline
        self.current = None
        self.save()
        print(f"[{time.perf_counter() - self.start:6.1f} s] {name}: {entry['status']} ({entry['seconds']} s)",
              file=sys.stderr, flush=True)

    def config(self) -> dict:
        sizes = {k: v for k, v in self.sizes.items() if k != "crosscheck_shapes"}
        sizes["crosscheck_shapes"] = [s.label for s in self.sizes["crosscheck_shapes"]]
        return {"device": self.device, "profile": self.profile, "quick": self.profile != "full",
                "budget_s": self.budget_s, "sizes": sizes}

    def save(self) -> None:
        """DIR/gpucheck.json, a section record of the report (`linrnn.base.results.write`: written in full to a
        temporary file and renamed, so a killed run leaves no half file)."""
        self.last_save = time.perf_counter()
        if self.path is None:
            return
        write(self.path, SectionRecord("gpucheck", device_label(self.device), self.config(), self.data,
                                       Envelope.here(self.command)))


def release_cuda_cache() -> None:
    """Give PyTorch's cached blocks back between steps, for JAX and the next step (best effort)."""
    try:
        import torch

        torch.cuda.empty_cache()
    except Exception:  # a broken CUDA context is reported by the step that broke it
        pass


def device_label(device: str) -> str:
    if device == "cpu":
        return "cpu"
    import torch

    return f"cuda ({torch.cuda.get_device_name(0)})"


def version(name: str) -> str:
    try:
        return metadata.version(name)
    except metadata.PackageNotFoundError:
        return "not installed"


def jax_sees() -> str:
    """JAX's default backend and devices, or why JAX does not import."""
    try:
        import jax

        return f"{jax.default_backend()}: {', '.join(str(d) for d in jax.devices())}"
    except Exception as err:  # a broken JAX install is itself the information
        return f"JAX does not start ({type(err).__name__}: {err})"


# -- (a) environment ------------------------------------------------------------------------------

def environment(run: Run, result: dict) -> dict:
    import torch

    result.update({"torch": torch.__version__, "torch_cuda": torch.version.cuda, "jax": version("jax"),
                   "jaxlib": version("jaxlib"), "triton": version("triton"), "jax_devices": jax_sees(),
                   "peers": {name: version(name) for name in PEERS},
                   "kernels": {name: (kernel(name, run.device)[1] or "available") for name in KERNEL_MODULES}})
    if run.device == "cuda":
        p = torch.cuda.get_device_properties(0)
        result["gpu"] = {"name": p.name, "memory_gib": round(p.total_memory / 2**30, 1),
                         "capability": f"{p.major}.{p.minor}", "multiprocessors": p.multi_processor_count}
        result["driver"] = nvidia_smi("driver_version")
    return result


def nvidia_smi(field: str) -> str:
    import subprocess

    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={field}", "--format=csv,noheader"], capture_output=True,
                             text=True, timeout=20, check=True).stdout.strip()
        return out.splitlines()[0] if out else "unknown (nvidia-smi printed nothing)"
    except (OSError, subprocess.SubprocessError) as err:
        return f"unknown ({type(err).__name__})"


# -- (b) the crosscheck matrix on the device --------------------------------------------------------

def crosscheck_step(run: Run, result: dict) -> dict:
    """The matrix one (dtype, mixer) at a time, float32 first, so the deadline can stop it between them
    and a part that raises (an op the device lacks, say) is recorded in `errors` while the rest runs."""
    s = run.sizes
    parts = [(dtype, kind) for dtype in s["crosscheck_dtypes"] for kind in s["crosscheck_kinds"]]
    entries, result["errors"], result["not_run"] = [], {}, [f"{kind} {dtype}" for dtype, kind in parts]
    for dtype, kind in parts:
        run.check()
        run.progress(f"{kind} {dtype}")
        result["not_run"].remove(f"{kind} {dtype}")
        selection = crosscheck.Selection(kinds=(kind,), modes=s["crosscheck_modes"], dtypes=(dtype,),
                                         shapes=s["crosscheck_shapes"])
        try:
            part = crosscheck.run(selection, device=run.device)
        except Exception as err:
            result["errors"][f"{kind} {dtype}"] = error_line(err)
            continue
        entries += part["entries"]
        result["devices"] = part["devices"]
        result.update(crosscheck_summary(entries))
    return result


def crosscheck_summary(entries: list[dict]) -> dict:
    failed = [e for e in entries if not e["ok"]]
    return {"comparisons": len(entries), "passed": len(entries) - len(failed), "failed": len(failed),
            "worst_ratio": max(e["rel"] / e["rtol"] for e in entries), "summary": crosscheck.summarise(entries),
            "failures": failed[:50]}


# -- (f) the speed and memory sweep ----------------------------------------------------------------

def sweep_step(run: Run, result: dict) -> dict:
    """`speed.sweep` once per framework, each given an equal share of the time left (what one leaves
    unused passes to the next), so that a slow first framework cannot leave the second no rows; the
    ratios across frameworks (to s5-pytorch, the GEMM floor) are then derived again over all rows."""
    speed = import_module("linrnn.experiments.speed")
    if not hasattr(speed, "sweep"):
        return {"status": "not available: linrnn.experiments.speed has no sweep()"}
    kwargs = dict(run.sizes["sweep"])
    frameworks = kwargs.pop("frameworks", ("torch", "jax"))
    result.update(rows=[], shares_s={}, not_run=[])
    for i, framework in enumerate(frameworks):
        share = max(0.0, run.left() - RESERVE_S) / (len(frameworks) - i)
        result["shares_s"][framework] = round(share, 1)
        part = speed.sweep(device=run.device, frameworks=(framework,), budget_s=CALL_BUDGET_S[run.profile],
                           deadline=time.monotonic() + share, progress=lambda done, total, what: run.progress(what),
                           **kwargs)
        result["rows"] += part["rows"]
        result["config"] = {**part["config"], "frameworks": list(frameworks)}
        result["not_run"] = cut_by_deadline(result["rows"])
        result["table"] = sweep_table(result["rows"])
        run.save()
    derived = sys.modules.get(speed.sweep.__module__)          # the sweep's own ratios, now over every framework
    if all(hasattr(derived, f) for f in ("derive", "scaling", "targets")):
        derived.derive(result["rows"], result["config"]["B"], result["config"]["H"])
        result.update(scaling=derived.scaling(result["rows"]), targets=derived.targets(result["rows"]),
                      table=sweep_table(result["rows"]))
    if result["not_run"]:
        result["status"] = "partial: budget"
    return result


def cut_by_deadline(rows: list[dict]) -> list[str]:
    """'framework implementation direction from L = ...' for each series the sweep's deadline cut short."""
    cut: dict[str, int] = {}
    for r in rows:
        if "deadline" in str(r.get("skipped") or ""):
            key = f"{r['framework']} {r['implementation']} {r['direction']}"
            cut[key] = min(cut.get(key, r["L"]), r["L"])
    return [f"{key} from L = {L}" for key, L in cut.items()]


def sweep_table(rows: list[dict]) -> dict:
    """The sweep's rows as the report's table: one series per framework x implementation x direction,
    one cell ({ms, peak_bytes} or None) per L."""
    lengths = sorted({r.get("L") for r in rows if r.get("L") is not None})
    series: dict[tuple, dict] = {}
    for r in rows:
        key = (r.get("framework"), r.get("implementation"), r.get("direction"))
        entry = series.setdefault(key, {"framework": key[0], "implementation": key[1], "direction": key[2],
                                        "cells": [None] * len(lengths)})
        if r.get("L") in lengths:
            entry["cells"][lengths.index(r["L"])] = {"ms": r.get("ms"), "peak_bytes": r.get("peak_bytes"),
                                                     "skipped": r.get("skipped")}
    return {"lengths": lengths, "series": list(series.values())}


# -- the command -------------------------------------------------------------------------------------

STEP_FUNCTIONS = {"environment": environment, "crosscheck": crosscheck_step, "kernels": kernels_step,
                  "mamba": mamba_step, "bandwidth": bandwidth_step, "sweep": sweep_step}


def check(device: str = "cuda", quick: bool = False, budget_s: float = 420.0, out=None,
          command: str | None = None) -> dict:
    """Every step in order within the budget -> the data of gpucheck.json (also written to out/ if given)."""
    crosscheck.check_device(device)
    if device == "cuda":   # JAX would take 75% of the GPU at its first use, leaving PyTorch the rest
        os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    saved = os.environ.get("TRITON_INTERPRET")
    if device == "cpu":
        os.environ["TRITON_INTERPRET"] = "1"     # Triton's interpreter on CPU tensors, read at each launch
    try:
        run = Run(device, quick, budget_s, out, command)
        for name in STEPS:
            run.step(name, STEP_FUNCTIONS[name])
        run.data["finished"] = True
        run.save()
    finally:
        if saved is None:
            os.environ.pop("TRITON_INTERPRET", None)
        else:
            os.environ["TRITON_INTERPRET"] = saved
    return run.data


def refuse_without_cuda() -> None:
    import torch

    if not torch.cuda.is_available():
        raise LinrnnError(f"no CUDA device visible to PyTorch {torch.__version__} (CUDA build: "
                          f"{torch.version.cuda or 'none'}); JAX sees {jax_sees()}; run it on a GPU machine, "
                          "or pass --device cpu for the test path")


def summary_lines(data: dict) -> list[str]:
    lines = []
    for name, step in data["steps"].items():
        r, extra = step["result"], ""
        if name == "crosscheck" and "comparisons" in r:
            extra = f": {r['passed']}/{r['comparisons']} within tolerance, worst error/tolerance {r['worst_ratio']:.3g}"
        elif name == "kernels":
            extra = "".join(f"; {k}: " + (f"{sum(x['ok'] for x in r[k]['rows'])}/{len(r[k]['rows'])} shapes ok"
                                          if r[k]["rows"] else r[k]["status"]) for k in KERNEL_MODULES if k in r)
        elif name == "mamba":
            extra = "".join(f"; {k}: " + (f"{r[k]['passed']} pass, {r[k]['failed']} fail, {r[k]['not_applicable']} n/a"
                                          if "passed" in r[k] else r[k]["status"]) for k in MAMBA_PATHS if k in r)
        elif name == "bandwidth" and "copy" in r:
            extra = f": copy {r['copy']['gb_per_s']:.0f} GB/s" + "".join(
                f"; {k} {s['fraction_of_copy']:.2f} of it at B{x['B']} L{x['L']} n{x['n']}"
                for x in r["shapes"] for k, s in x["scans"].items() if "fraction_of_copy" in s)
        elif name == "sweep" and "rows" in r:
            extra = f": {len(r['rows'])} rows"
        lines.append(f"{name:<12} {step['status']} ({step['seconds']} s){extra}")
    return lines


def failed(data: dict) -> bool:
    """A step failed, or a check exceeded its tolerance (budget and availability are not failures)."""
    steps = data["steps"]
    cc = steps["crosscheck"]["result"]
    kernel_rows = [row for k in KERNEL_MODULES for row in steps["kernels"]["result"].get(k, {}).get("rows", [])]
    scans = [s for x in steps["bandwidth"]["result"].get("shapes", []) for s in x["scans"].values()]
    mamba = [p for k, p in steps["mamba"]["result"].items() if k in MAMBA_PATHS]
    return (any(s["status"].startswith("failed") for s in [*steps.values(), *scans, *mamba])
            or cc.get("failed", 0) > 0 or bool(cc.get("errors")) or not all(row["ok"] for row in kernel_rows)
            or any(p.get("failed", 0) > 0 for p in mamba))


def register(subparsers) -> None:
    p = subparsers.add_parser("gpucheck", help="on a GPU: crosscheck, kernels, mamba-ssm, bandwidth and speed sweep, "
                                               "as JSON")
    p.add_argument("--out", default=DEFAULT_OUT,
                   help=f"where gpucheck.json goes (default ./{DEFAULT_OUT}); render: linrnn report --from DIR")
    p.add_argument("--budget-s", type=float, default=420.0, help="deadline in seconds from the start (default 420)")
    p.add_argument("--device", choices=crosscheck.DEVICES, default="cuda",
                   help="cuda (default), or cpu: the test path at tiny sizes")
    p.add_argument("--quick", action="store_true", help="smaller sizes on the GPU (--device cpu is always tiny)")
    p.set_defaults(func=_main)


def _main(args: argparse.Namespace) -> int:
    if not args.budget_s > 0:
        raise LinrnnError(f"--budget-s: expected a positive number of seconds, found {args.budget_s}")
    if args.device == "cuda":
        refuse_without_cuda()
    data = check(args.device, args.quick, args.budget_s, args.out, command_line(args))
    print("\n".join(summary_lines(data)))
    print(f"wrote {Path(args.out) / 'gpucheck.json'} in {data.get('elapsed_s', 0):.0f} s; "
          f"render with: linrnn report --from {args.out}")
    return 1 if failed(data) else 0
