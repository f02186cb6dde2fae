"""`linrnn gpucheck`: everything but the CUDA calls, on the CPU, so the one run on a lent GPU cannot fail on
something testable here.

The end-to-end test runs the real pipeline at the "tiny" profile (`--device cpu`: Triton in its interpreter,
Pallas with interpret=True) and renders it with `linrnn report --from`. mamba-ssm cannot be installed without
CUDA, so its step is tested on a stand-in module whose `selective_scan_ref` is written here from mamba-ssm's
published definition (a faithful one passes, planted errors are caught). The kernel modules and the sweep are
used where they exist; where one is absent its step records "not available: <reason>" and the test still
holds. A stand-in `speed.sweep` (monkeypatched, `raising=False`) is used only by the test of the sweep's
table, while `linrnn.experiments.speed.sweep` does not exist yet; the other stand-ins are fakes of the
step functions, to plant a failure or run out of budget in milliseconds.
"""

import json
import sys
import time
from types import ModuleType, SimpleNamespace

import numpy as np
import pytest
import torch

from linrnn.cli import main
from linrnn.experiments import gpucheck, gpukernels, speed
from linrnn.verify import crosscheck
from linrnn.base.errors import LinrnnError
from linrnn.reports import cli as report_cli
from linrnn.base.results import SCHEMA_VERSION
from linrnn.reports.results import read_results
from linrnn.reports.sections import gpucheck as gpu_section

SETTLED = ("done", "partial: budget", "not run: budget", "not available: ", "skipped: ")
MAMBA_SKIPPED = "skipped: mamba_ssm is not installed (sh tools/install-peers.sh installs it without its CUDA build)"


def render(directory, out):
    """`linrnn report --from directory --out out` -> the page's text."""
    assert report_cli._report(type("Args", (), {"from_dirs": [str(directory)], "out": str(out), "quick": False})()) == 0
    return (out / "report.html").read_text()


def section_html(page: str) -> str:
    start = page.index('<section id="gpucheck"')
    return page[start:page.index("</section>", start)]


@pytest.fixture(scope="module")
def cpu_run(tmp_path_factory):
    """One `linrnn gpucheck --device cpu` (the tiny profile) -> (exit status, directory, the record)."""
    out = tmp_path_factory.mktemp("gpucheck")
    status = main(["gpucheck", "--device", "cpu", "--out", str(out)])
    return status, out, json.loads((out / "gpucheck.json").read_text())


def test_without_cuda_the_command_refuses_in_one_line(capsys, monkeypatch, tmp_path):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert main(["gpucheck", "--out", str(tmp_path / "gpu")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no CUDA device visible to PyTorch" in err and "JAX sees" in err, err
    assert not (tmp_path / "gpu").exists()


def test_cpu_path_runs_every_step_and_writes_the_reports_format(cpu_run):
    status, out, record = cpu_run
    steps = record["data"]["steps"]
    assert list(steps) == list(gpucheck.STEPS)
    assert all(s["status"].startswith(SETTLED) for s in steps.values()), {k: s["status"] for k, s in steps.items()}
    assert status == (1 if gpucheck.failed(record["data"]) else 0) == 0
    assert (record["schema_version"], record["kind"], record["section"]) == (SCHEMA_VERSION, "section", "gpucheck")
    assert record["command"] == f"linrnn gpucheck --device cpu --out {out}" and record["device"] == "cpu"
    loaded = read_results([out], ["gpucheck"])
    assert loaded.skipped == [] and loaded.results[0]["meta"]["config"]["profile"] == "tiny"
    assert steps["environment"]["status"] == "done" and steps["environment"]["result"]["torch"] == torch.__version__
    cc = steps["crosscheck"]["result"]
    assert steps["crosscheck"]["status"] == "done" and cc["failed"] == 0 and cc["comparisons"] == cc["passed"] > 0
    assert cc["devices"] == {"reference": "cpu", "torch": "cpu", "jax": "cpu:0"}
    for name in gpukernels.KERNEL_MODULES:      # the varying kernels (issue 52) with the diagonal ones
        part = steps["kernels"]["result"][name]
        assert part["status"] == "done" and part["rows"] and all(r["ok"] for r in part["rows"]) \
            or part["status"].startswith("not available: "), part
    if steps["mamba"]["status"].startswith("skipped"):
        assert steps["mamba"]["status"] == MAMBA_SKIPPED and steps["mamba"]["result"] == {}
    bw = steps["bandwidth"]["result"]
    assert bw["copy"]["gb_per_s"] > 0 and bw["shapes"][0]["scans"]["torch chunked"]["fraction_of_copy"] > 0
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]


def test_report_from_renders_every_step(cpu_run, tmp_path):
    _, out, record = cpu_run
    html = section_html(render(out, tmp_path))
    for name in gpucheck.STEPS:
        assert f"<td>{name}</td>" in html
    assert "Crosscheck on the device" in html and "Bandwidth" in html
    if record["data"]["steps"]["kernels"]["result"]["triton"]["rows"]:
        assert "<td>triton</td>" in html


def test_a_wrong_kernel_is_caught(monkeypatch):
    """A planted relative error of 1e-4 in the states (float32 tolerance here: about 1e-6 to 1e-4 x memory)
    fails the kernels step, while `chunked` itself standing in for the kernel passes."""
    from linrnn.impls.torch.scan import chunked

    honest = type("Kernel", (), {"scan": staticmethod(chunked)})
    wrong = type("Kernel", (), {"scan": staticmethod(lambda lam, v, x0=None: chunked(lam, v, x0) * (1 + 1e-4))})
    rows = {}
    for label, module in (("honest", honest), ("wrong", wrong)):
        monkeypatch.setattr(gpukernels, "kernel", lambda name, device, m=module: (m, None) if name == "triton"
                            else (None, "not available: not under test"))
        run = gpucheck.Run("cpu", False, 60, None)
        rows[label] = gpukernels.kernels_step(run, {})["triton"]["rows"]
    assert rows["honest"] and rows["wrong"]
    assert all(r["ok"] for r in rows["honest"])
    assert not any(r["ok"] for r in rows["wrong"]) and all(not r["states"]["ok"] for r in rows["wrong"])
    steps = {name: {"status": "done", "result": {}} for name in gpucheck.STEPS}
    steps["kernels"]["result"] = {"triton": {"rows": rows["wrong"]}}
    assert gpucheck.failed({"steps": steps})                      # the command then exits 1
    steps["kernels"]["result"] = {"triton": {"rows": rows["honest"]}}
    assert not gpucheck.failed({"steps": steps})


# -- mamba-ssm, on a stand-in module ------------------------------------------------------------------

def stand_in_mamba(monkeypatch, planted: str | None = None):
    """`mamba_ssm.ops.selective_scan_interface` as a stand-in module, its scan written from mamba-ssm's published
    definition of `selective_scan_ref(u, delta, A, B, C, D=None, z=None, delta_bias=None, delta_softplus=False,
    return_last_state=False)`: u, delta (b d l); A (d n), real or complex; B and C either (d n), or per position
    (b n l) or (b g n l) with each group shared by d / g consecutive channels, and with a complex A (real,
    imaginary) pairs along l; delta += delta_bias, then softplus if asked;
        x_l = exp(delta_l A) x_{l-1} + delta_l B_l u_l,   y_l = sum_n C_l x_l  (2 Re(...) with a complex A),
    out = y + D u, times silu(z) if given, in float32, returned in u's dtype (with x_L if asked).
    `selective_scan_fn` (the fused kernel) is the same function here.

    planted: "delta_not_in_B" (x_l = exp(delta_l A) x_{l-1} + B_l u_l) or "real_part_once" (Re instead of 2 Re)."""
    import torch.nn.functional as F

    from linrnn.verify import conform_peers_torch as peers

    def selective_scan_ref(u, delta, A, B, C, D=None, z=None, delta_bias=None, delta_softplus=False,
                           return_last_state=False):
        dtype_in, u, delta = u.dtype, u.float(), delta.float()
        if delta_bias is not None:
            delta = delta + delta_bias.float()[:, None]
        if delta_softplus:
            delta = F.softplus(delta)
        batch, dim, L = u.shape

        def per_position(M):                                  # -> (b d n l)
            if M.dim() == 2:
                return M[None, :, :, None].expand(batch, dim, M.shape[1], L)
            M = torch.view_as_complex(M.float().reshape(*M.shape[:-1], L, 2).contiguous()) if A.is_complex() \
                else M.float()
            M = M[:, None] if M.dim() == 3 else M
            return M.repeat_interleave(dim // M.shape[1], dim=1)

        B_, C_ = per_position(B), per_position(C)
        step = delta[:, :, None, :]
        decay = torch.exp(step * A[None, :, :, None])
        drive = (1.0 if planted == "delta_not_in_B" else step) * B_ * u[:, :, None, :]
        x = torch.zeros(batch, dim, A.shape[1], dtype=decay.dtype)
        ys = []
        for i in range(L):
            x = decay[..., i] * x + drive[..., i]
            y = (x * C_[..., i]).sum(-1)
            ys.append((1 if planted == "real_part_once" else 2) * y.real if y.is_complex() else y)
        out = torch.stack(ys, dim=-1)
        out = out if D is None else out + D.float()[:, None] * u
        out = (out if z is None else out * F.silu(z.float())).to(dtype_in)
        return (out, x) if return_last_state else out

    module = ModuleType(peers.MAMBA_MODULE)
    module.selective_scan_ref = module.selective_scan_fn = selective_scan_ref
    for name in ("mamba_ssm", "mamba_ssm.ops"):
        monkeypatch.setitem(sys.modules, name, ModuleType(name))
    monkeypatch.setitem(sys.modules, peers.MAMBA_MODULE, module)
    extension = ModuleType("selective_scan_cuda")            # its compiled extension, built: the fused path runs
    extension.fwd = extension.bwd = selective_scan_ref
    monkeypatch.setitem(sys.modules, "selective_scan_cuda", extension)
    monkeypatch.setattr(peers, "MAMBA_FUSED_DEVICES", ("cuda", "cpu"))     # the stand-in "kernel" runs on the CPU


COMPLEX = {"variant complex=true, varying=false", "variant complex=true, reverse=true, varying=false"}


@pytest.mark.parametrize("planted", [None, "delta_not_in_B", "real_part_once"])
def test_the_mamba_step_passes_a_faithful_stand_in_and_catches_planted_errors(monkeypatch, planted):
    """Both paths through the scan contract's battery (tiny profile: lengths 1 7, long L = 64) on the stand-in:
    faithful, every check passes but the varying complex a_t mamba-ssm cannot express (n/a, with why); delta left
    out of delta B u fails every check; Re for 2 Re fails the complex ones only. A failure fails the command."""
    stand_in_mamba(monkeypatch, planted)
    result = gpukernels.mamba_step(gpucheck.Run("cpu", False, 60, None), {})
    assert result["dtype"] == "float32" and result["lengths"] == [1, 7] and result["long_length"] == 64
    for function, name in gpukernels.MAMBA_PATHS.items():
        part = result[function]
        checks = {c["name"]: c for c in part["checks"]}
        assert part["status"] == "done" and part["target"] == name, part
        assert {n for n, c in checks.items() if c["status"] == "n/a"} == \
            {"variant complex=true", "variant complex=true, reverse=true"}
        assert "no delta_t" in checks["variant complex=true"]["detail"]
        assert {"random L=1", "random L=7", "radius near 1", "long L=64", "variant reverse=true"} | COMPLEX <= set(checks)
        failing = {n for n, c in checks.items() if c["status"] == "fail"}
        expected = {None: set(), "real_part_once": COMPLEX,
                    "delta_not_in_B": {n for n, c in checks.items() if c["status"] != "n/a"}}[planted]
        assert failing == expected, part
        assert part["ok"] == (planted is None) and part["failed"] == len(expected)
        assert (part["worst_ratio"] < 1) == (planted is None)
    steps = {name: {"status": "done", "result": {}} for name in gpucheck.STEPS}
    steps["mamba"]["result"] = result
    assert gpucheck.failed({"steps": steps}) == (planted is not None)


def test_the_mamba_step_is_skipped_where_mamba_ssm_is_absent_and_renders_where_it_runs(monkeypatch, tmp_path):
    from linrnn.verify import conform_peers_torch as peers

    if peers.mamba_missing() == peers.MAMBA_ABSENT:                   # this machine: no mamba_ssm
        assert gpukernels.mamba_step(gpucheck.Run("cpu", False, 60, None), {}) == {"status": MAMBA_SKIPPED}
    stand_in_mamba(monkeypatch)
    fake_steps(monkeypatch, mamba=gpukernels.mamba_step)
    data = gpucheck.check("cpu", out=tmp_path)
    assert data["steps"]["mamba"]["status"] == "done" and not gpucheck.failed(data)
    line = next(x for x in gpucheck.summary_lines(data) if x.startswith("mamba"))
    assert "selective_scan_ref: 12 pass, 0 fail, 2 n/a; selective_scan_fn: 12 pass, 0 fail, 2 n/a" in line, line
    html = section_html(render(tmp_path, tmp_path / "page"))
    assert "mamba-ssm's selective scan against the scan contract" in html
    assert html.count("<tr><td>selective_scan_fn</td><td>") == 14 and "<td>long L=64</td>" in html


def test_mamba_ssm_installed_without_its_cuda_build_has_no_fused_kernel(monkeypatch):
    """As tools/install-peers.sh installs it (MAMBA_SKIP_CUDA_BUILD): its extension is an empty stand-in, so on a
    CUDA device the fused target says why it cannot run (not a crash inside the kernel call); the reference runs."""
    from linrnn.verify import conform_peers_torch as peers

    stand_in_mamba(monkeypatch)
    monkeypatch.setitem(sys.modules, "selective_scan_cuda", ModuleType("selective_scan_cuda"))
    assert peers.mamba_missing("mamba-ssm-ref", "cuda") is None
    assert peers.mamba_missing("mamba-ssm", "cuda") == (
        "mamba-ssm was installed without its CUDA build (MAMBA_SKIP_CUDA_BUILD): its fused kernel's extension "
        "selective_scan_cuda is an empty stand-in here")
    monkeypatch.setattr(peers, "MAMBA_FUSED_DEVICES", ("cuda",))          # as shipped: the CPU is not one
    assert peers.mamba_missing("mamba-ssm", "cpu").startswith("selective_scan_fn is mamba-ssm's fused CUDA kernel: "
                                                              "it needs a CUDA device (here: cpu)")


def test_the_mamba_targets_in_conform(monkeypatch):
    """`linrnn conform mamba-ssm-ref --model scan` on the stand-in: float64 is n/a (it computes in float32), float32
    conforms; another contract is a one-line error."""
    from linrnn.verify import conform

    stand_in_mamba(monkeypatch)
    result = conform.run("mamba-ssm-ref", "scan", lengths=(1, 7), long_length=64)
    assert result.ok, conform.format_result(result)
    assert all(c.status == "n/a" and "computes in float32 only" in c.detail for c in result.checks
               if c.dtype == "float64")
    assert sum(c.status == "pass" for c in result.checks) == 12      # with lengths 1-8 and the very long check
    with pytest.raises(LinrnnError, match="^mamba-ssm-ref implements scan, found --model lru$"):
        conform.run("mamba-ssm-ref", "lru", ("float32",), (1,), long_length=0)


def fake_steps(monkeypatch, **overrides):
    """Every step replaced by a fast fake (recording its name) unless overridden."""
    def fake(name):
        return lambda run, result: {"ran": name}
    monkeypatch.setattr(gpucheck, "STEP_FUNCTIONS", {name: overrides.get(name, fake(name)) for name in gpucheck.STEPS})


def test_a_crosscheck_part_that_raises_is_recorded_and_the_other_parts_still_run(monkeypatch, tmp_path):
    real = crosscheck.run

    def no_float64(selection, progress=None, device="cpu"):
        if "float64" in selection.dtypes:
            raise RuntimeError("planted: no float64 here")
        return real(selection, progress, device)

    monkeypatch.setattr(crosscheck, "run", no_float64)
    monkeypatch.setitem(gpucheck.PROFILES["tiny"], "crosscheck_dtypes", ("float64", "float32"))
    fake_steps(monkeypatch, crosscheck=gpucheck.crosscheck_step)
    data = gpucheck.check("cpu", out=tmp_path)
    cc = data["steps"]["crosscheck"]
    assert cc["status"] == "done"
    assert cc["result"]["errors"] == {"lru float64": "RuntimeError: planted: no float64 here"}
    assert cc["result"]["comparisons"] == cc["result"]["passed"] > 0 and gpucheck.failed(data)
    assert "planted: no float64 here" in section_html(render(tmp_path, tmp_path / "page"))


def test_a_step_that_raises_is_recorded_and_the_next_still_runs(monkeypatch, tmp_path):
    def broken(run, result):
        result["half"] = "done before the error"
        raise RuntimeError("planted failure\nsecond line")

    fake_steps(monkeypatch, crosscheck=broken)
    data = gpucheck.check("cpu", out=tmp_path)
    steps = data["steps"]
    assert steps["crosscheck"]["status"] == "failed: RuntimeError: planted failure"
    assert "Traceback" in steps["crosscheck"]["error"]
    assert steps["crosscheck"]["result"] == {"half": "done before the error"}
    assert [steps[n]["status"] for n in ("environment", "kernels", "mamba", "bandwidth", "sweep")] == ["done"] * 5
    assert steps["sweep"]["result"] == {"ran": "sweep"} and gpucheck.failed(data)
    html = section_html(render(tmp_path, tmp_path / "page"))
    assert "failed: RuntimeError: planted failure" in html and "planted failure" in html


def test_the_deadline_stops_a_step_and_marks_the_rest_not_run(monkeypatch, tmp_path):
    def slow(run, result):                 # checks the deadline between parts, as the real steps do
        result["parts"] = []
        for i in range(1000):
            run.check()
            result["parts"].append(i)
            time.sleep(0.01)

    fake_steps(monkeypatch, environment=slow)          # no share: runs into the global deadline
    data = gpucheck.check("cpu", budget_s=0.3, out=tmp_path)
    steps = data["steps"]
    assert steps["environment"]["status"] == "partial: budget"
    assert 0 < len(steps["environment"]["result"]["parts"]) < 1000
    assert [steps[n]["status"] for n in ("crosscheck", "kernels", "mamba", "bandwidth", "sweep")] == \
        ["not run: budget"] * 5
    assert not gpucheck.failed(data)
    assert json.loads((tmp_path / "gpucheck.json").read_text())["data"]["steps"]["sweep"]["status"] == "not run: budget"
    assert "not run: budget" in section_html(render(tmp_path, tmp_path / "page"))

    # a share: stops there, and the later steps still run (a budget of seconds, so that a loaded machine's pauses
    # do not use up what the fake later steps need)
    fake_steps(monkeypatch, crosscheck=slow)
    steps = gpucheck.check("cpu", budget_s=4.0, out=tmp_path)["steps"]
    assert steps["crosscheck"]["status"] == "partial: budget"
    assert steps["crosscheck"]["seconds"] < gpucheck.SHARES["crosscheck"] * 4.0 + 0.1
    assert [steps[n]["status"] for n in ("kernels", "mamba", "bandwidth", "sweep")] == ["done"] * 4


def test_a_run_killed_mid_step_still_renders(monkeypatch, tmp_path):
    """The file as a `timeout` leaves it: the step in flight reads "running", the later ones "pending"."""
    run = gpucheck.Run("cpu", False, 60, tmp_path)
    run.data["steps"]["environment"].update(status="done", seconds=1.0, result={"torch": "x", "jax": "y"})
    run.data["steps"]["crosscheck"].update(status="running", at="lru float64")
    run.data["elapsed_s"] = 1.0                                   # as after the first step
    run.save()
    html = section_html(render(tmp_path, tmp_path / "page"))
    assert "did not finish" in html and "running" in html and "lru float64" in html


def test_the_sweep_shares_the_time_left_between_frameworks_and_renders_as_a_table(monkeypatch, tmp_path):
    """A fake `speed.sweep` with fixed rows (the real one runs in the end-to-end test): each framework gets
    its share of the time left, a row cut by the deadline is listed, and the table renders exactly."""
    calls = []

    def sweep(*, device, frameworks, budget_s, deadline, progress, **sizes):
        calls.append({"device": device, "frameworks": frameworks, "left": deadline - time.monotonic(), **sizes})
        progress(1, 2, f"{frameworks[0]} L=16")
        fw, impl = frameworks[0], {"torch": "chunked", "jax": "pallas"}[frameworks[0]]
        rows = [{"framework": fw, "implementation": impl, "direction": "forward", "L": L, "ms": 0.5 * L,
                 "peak_bytes": 2**20 * L, "skipped": None} for L in (16, 32)]
        if fw == "jax":
            rows[1].update(ms=None, peak_bytes=None, skipped="not run: the sweep's deadline passed")
        return {"rows": rows, "config": {"lengths": [16, 32], "B": 1, "H": 4}}

    monkeypatch.setattr(speed, "sweep", sweep)
    monkeypatch.setitem(gpucheck.PROFILES["tiny"], "sweep", {"lengths": (16, 32), "frameworks": ("torch", "jax")})
    fake_steps(monkeypatch, sweep=gpucheck.sweep_step)
    data = gpucheck.check("cpu", budget_s=60, out=tmp_path)
    result = data["steps"]["sweep"]["result"]
    assert data["steps"]["sweep"]["status"] == "partial: budget"
    assert [c["frameworks"] for c in calls] == [("torch",), ("jax",)] and calls[0]["lengths"] == (16, 32)
    assert 0.4 * (60 - gpucheck.RESERVE_S) < calls[0]["left"] <= 0.5 * (60 - gpucheck.RESERVE_S)   # half each
    assert calls[0]["left"] < calls[1]["left"] <= 60 - gpucheck.RESERVE_S     # torch's unused time passed on
    assert result["not_run"] == ["jax pallas forward from L = 32"]
    table = result["table"]
    assert table["lengths"] == [16, 32] and [s["implementation"] for s in table["series"]] == ["chunked", "pallas"]
    assert table["series"][1]["cells"][1]["ms"] is None
    html = section_html(render(tmp_path, tmp_path / "page"))
    assert "Speed and memory sweep" in html and "<th>L = 32</th>" in html and "16.00 (32)" in html
    assert "title=\"not run: the sweep&#39;s deadline passed\"" in html


def test_the_report_section_says_how_to_run_it_where_there_is_no_gpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    data, config = gpu_section.compute(True, lambda *a: None)
    assert "no CUDA device" in data["not_run"] and config["device"] == "cpu"
    from linrnn.reports.render import environment
    html = environment().get_template(gpu_section.TEMPLATE).render(record={"data": data, "meta": {"config": config}})
    assert "Not run here" in html and "linrnn gpucheck --out DIR" in html


def test_crosscheck_device_option():
    """'cpu' keeps the CPU path; other names are refused in one line; on CUDA the float32 flags are IEEE and
    restored afterwards (flags only: this runs without a GPU)."""
    with pytest.raises(LinrnnError, match="device: expected one of cpu, cuda"):
        crosscheck.check_device("tpu")
    small = crosscheck.Selection(kinds=("lru",), modes=("scan",), dtypes=("float32",),
                                 shapes=(crosscheck.Shape(1, 3, 2, 2, False, False),))
    a, b = crosscheck.run(small), crosscheck.run(small, device="cpu")
    assert [e["max_abs"] for e in a["entries"]] == [e["max_abs"] for e in b["entries"]] and a["ok"]
    before = torch.backends.cuda.matmul.fp32_precision, torch.backends.cudnn.conv.fp32_precision
    with crosscheck._torch_full_float32("cuda"):
        assert (torch.backends.cuda.matmul.fp32_precision, torch.backends.cudnn.conv.fp32_precision) == ("ieee", "ieee")
    assert (torch.backends.cuda.matmul.fp32_precision, torch.backends.cudnn.conv.fp32_precision) == before


def test_the_cuda_branches_run_against_a_stand_in_device(monkeypatch, capsys):
    """The lines that only a GPU run reaches, other than the CUDA kernels themselves: PyTorch's CUDA queries
    are stood in for (a fake H200), the tensors stay on the CPU."""
    props = SimpleNamespace(name="Fake H200", total_memory=141 * 2**30, major=9, minor=0, multi_processor_count=132)
    released = []
    monkeypatch.setattr(torch.cuda, "get_device_properties", lambda index: props)
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda index=0: props.name)
    monkeypatch.setattr(torch.cuda, "current_device", lambda: 0)
    monkeypatch.setattr(torch.cuda, "empty_cache", lambda: released.append(1))
    monkeypatch.setattr(torch.cuda, "reset_peak_memory_stats", lambda: None)
    monkeypatch.setattr(torch.cuda, "max_memory_allocated", lambda: 3 * 2**20)
    run = gpucheck.Run("cuda", False, 60, None)
    env = gpucheck.environment(run, {})
    assert env["gpu"] == {"name": "Fake H200", "memory_gib": 141.0, "capability": "9.0", "multiprocessors": 132}
    assert isinstance(env["driver"], str) and env["kernels"]["triton"]
    assert gpucheck.device_label("cuda") == "cuda (Fake H200)"
    timing = gpukernels.timed(lambda: None, lambda: None, 1, 2 * 10**6, 1000.0, "cuda")
    assert timing["peak_bytes"] == 3 * 2**20 and timing["fraction_of_copy"] == timing["gb_per_s"] / 1000.0
    run.step("environment", lambda run, result: {"ok": 1})
    assert released and run.data["steps"]["environment"]["status"] == "done"

    real = crosscheck.torch_output_and_grads
    seen = []

    def on_cpu(bundle, u, w, mode, dtype, device="cpu"):
        seen.append(device)
        return real(bundle, u, w, mode, dtype)

    monkeypatch.setattr(crosscheck, "torch_output_and_grads", on_cpu)
    small = crosscheck.Selection(kinds=("lru",), modes=("scan",), dtypes=("float32",),
                                 shapes=(crosscheck.Shape(1, 3, 2, 2, False, False),))
    result = crosscheck.run(small, device="cuda")
    assert result["ok"] and set(seen) == {"cuda"}
    assert result["devices"] == {"reference": "cpu", "torch": "cuda:0 (Fake H200)",
                                 "jax": str(crosscheck.jax_device("cuda"))}


@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_crosscheck_on_cuda_passes_with_the_reference_on_the_cpu():
    small = crosscheck.Selection(kinds=("lru", "rotrnn"), modes=("scan",), dtypes=("float32", "float64"),
                                 shapes=(crosscheck.Shape(1, 9, 2, 2, False, True),))
    result = crosscheck.run(small, device="cuda")
    assert result["ok"], [e for e in result["entries"] if not e["ok"]]
    assert result["devices"]["torch"].startswith("cuda") and result["devices"]["reference"] == "cpu"
    assert np.isfinite([e["rel"] for e in result["entries"]]).all()
