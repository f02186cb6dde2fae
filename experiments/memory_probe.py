"""Peak memory of one call in a fresh process (CPU): what the training-speed sweep reports as peak_bytes.

    probe_memory(spec, build) -> (peak_bytes, None) | (None, reason)

`spec` is the plain-data description of one case at one length that the caller's builder `build`
("module:function", e.g. `linrnn.experiments.training_speed.build`) turns into `(call, info)`; the probe
imports it by that name in the child, so this module sits below the sweeps that use it. The probe starts a
new Python process (`python -c ... probe_main() SPEC_JSON BUILD`), so that nothing a previous case allocated,
cached or freed into an allocator's pool hides or inflates this one. In it:

    1. import the framework and build + run the same case once at L <= 8: lazy initialisation
       (thread pools, kernels, JAX's backend) happens here, not in the measurement; free it and return
       freed heap pages to the system (glibc `malloc_trim`);
    2. build the case: JAX compiles it from the shapes alone, then `PeakRSS.start` resets the kernel's
       high-water mark and reads VmRSS as the baseline, then the parameters and u are allocated;
    3. run the call once (JAX: the builder has already run it once; a second run changes no peak);
    4. print {"peak_bytes": VmHWM - baseline}: parameters, u, temporaries, outputs and gradients.

The child runs with MALLOC_MMAP_THRESHOLD_=131072 (unless set): every block above 128 KiB is its own
mapping, returned on free, so the resident high-water mark follows the live bytes rather than what
glibc's heap kept after a free (without it, a layer's measured peak read up to 2x higher here).

A process killed by a signal (the kernel's OOM killer sends 9) or an allocation error is reported as
"out of memory", anything else as "memory probe failed: ..."; the sweep records the reason in the row.
"""

from __future__ import annotations

import ctypes
import gc
import importlib
import json
import os
import subprocess
import sys

from linrnn.verify.bench import PeakRSS

WARMUP_L = 8             # the warm-up length: small enough that memory it freed hides nothing later
TIMEOUT_S = 900.0        # one probe's wall-clock limit


def _release_freed_memory() -> None:
    """Give freed heap pages back to the system (glibc), so that the measured call cannot reuse them unseen."""
    gc.collect()
    try:
        ctypes.CDLL(None).malloc_trim(0)
    except (OSError, AttributeError):  # not glibc: the warm-up's few pages may be reused (a small undercount)
        pass


def out_of_memory(err: BaseException) -> bool:
    """Whether an exception is an allocation failure (Python, PyTorch CPU/CUDA, XLA)."""
    text = str(err).lower()
    return isinstance(err, MemoryError) or any(s in text for s in (
        "out of memory", "can't allocate memory", "cannot allocate memory", "resource_exhausted",
        "resource exhausted"))


def probe_main() -> None:
    """The probe process: `python -c '...probe_main()' SPEC_JSON BUILD` prints {"peak_bytes": n} or {"error": ...}."""
    spec = json.loads(sys.argv[1])
    module, _, name = sys.argv[2].partition(":")
    build = getattr(importlib.import_module(module), name)
    try:
        call, _ = build({**spec, "L": min(spec["L"], WARMUP_L)})
        call()
        del call
        _release_freed_memory()
        probe = PeakRSS()
        call, _ = build(spec, before_inputs=probe.start)
        call()
        print(json.dumps({"peak_bytes": probe.peak_bytes()}))
    except Exception as err:  # reported to the sweep, which records it in the row
        first = str(err).splitlines()[0] if str(err) else ""
        print(json.dumps({"error": f"{type(err).__name__}: {first}", "out_of_memory": out_of_memory(err)}))


def probe_memory(spec: dict, build: str, timeout_s: float = TIMEOUT_S) -> tuple[int | None, str | None]:
    """Peak bytes of one call of `spec`, built by `build` ("module:function"), in a fresh process -> (bytes, None), or
    (None, why not)."""
    env = dict(os.environ)
    if spec["device"] == "cpu":
        env["JAX_PLATFORMS"] = "cpu"
        # glibc serves blocks under its (growing) mmap threshold from the heap, where a freed block's
        # pages stay resident: VmHWM then counts memory already freed. A fixed 128 KiB threshold maps
        # every larger block on its own and unmaps it on free, so the high-water mark is the live peak.
        env.setdefault("MALLOC_MMAP_THRESHOLD_", str(128 * 1024))
    command = [sys.executable, "-c", "from linrnn.experiments.memory_probe import probe_main; probe_main()",
               json.dumps(spec), build]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout_s, env=env)
    except subprocess.TimeoutExpired:
        return None, f"memory probe: no result within {timeout_s:.0f} s"
    if done.returncode < 0:
        return None, (f"out of memory: the probe process was killed by signal {-done.returncode}"
                      + (" (the kernel's OOM killer sends 9)" if done.returncode == -9 else ""))
    try:
        answer = json.loads(done.stdout.strip().splitlines()[-1])
    except (IndexError, json.JSONDecodeError):
        tail = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return None, f"memory probe failed (exit {done.returncode}): {tail}"
    if "error" in answer:
        return None, ("out of memory: " if answer["out_of_memory"] else "memory probe failed: ") + answer["error"]
    return int(answer["peak_bytes"]), None


def available_bytes(device: str) -> int | None:
    """Memory free for the next length: MemAvailable on a CPU, the device's free memory on CUDA (None: unknown)."""
    if device != "cpu":
        import torch
        return torch.cuda.mem_get_info(torch.device(device))[0] if torch.cuda.is_available() else None
    try:
        with open("/proc/meminfo") as f:
            return next(1024 * int(line.split()[1]) for line in f if line.startswith("MemAvailable:"))
    except (OSError, StopIteration):
        return None
