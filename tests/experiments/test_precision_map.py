"""The precision map (`linrnn.experiments.precision_map`) and its report section: the radius it sets, the kernels'
float64 references, the cells' verdicts against the tolerance table, and the heatmaps the page draws."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from linrnn.experiments import precision_map as pm
from linrnn.impls.config import RECURRENT_KINDS, mixer_config
from linrnn.impls.init import init
from linrnn.impls.reference import placed_radius, spectral_radius
from linrnn.impls.torch import scan
from linrnn.reports.render import render
from linrnn.reports.results import read_results, write_result
from linrnn.reports.sections import precision_map as section


@pytest.mark.parametrize("kind", RECURRENT_KINDS)
@pytest.mark.parametrize("r", [0.9, 0.9999])
def test_with_radius_puts_every_eigenvalue_on_the_radius(kind, r):
    bundle = pm.with_radius(init(mixer_config(kind, 2, 2), 0), r)
    assert placed_radius(bundle.config, bundle.params) == pytest.approx(r, abs=1e-12)
    if kind == "rglru":                     # the input moves its decay from r (the gate's largest value) towards 1
        assert spectral_radius(bundle.config, bundle.params) == 1.0
    else:
        assert spectral_radius(bundle.config, bundle.params) == pytest.approx(r, abs=1e-12)
    if kind == "lru":                       # every mode, not only the largest
        from linrnn.impls.reference import lru
        assert np.allclose(np.abs(lru.eigenvalues(bundle.params)), r, rtol=0, atol=1e-12)


def test_the_kernel_references_are_the_recurrence_and_its_adjoint():
    """lfilter's states and the adjoint a_t = g_t + conj(lambda) a_{t+1} equal the float64 PyTorch scan's states and
    its autograd gradient in v (a wrong adjoint, e.g. lambda for conj(lambda), fails at these phases)."""
    lam, v, g, states, adjoint = pm.kernel_case(40, 0.99)
    log_lam = torch.tensor(np.log(lam))
    x = torch.tensor(np.stack([v.real, v.imag], -1))[None].requires_grad_()
    got = scan.sequential(log_lam, x)
    (d_v,) = torch.autograd.grad(got, [x], torch.tensor(np.stack([g.real, g.imag], -1))[None])
    got, d_v = got.detach().numpy()[0], d_v.numpy()[0]
    assert np.abs(got[..., 0] + 1j * got[..., 1] - states).max() < 1e-12 * np.abs(states).max()
    assert np.abs(d_v[..., 0] + 1j * d_v[..., 1] - adjoint).max() < 1e-12 * np.abs(adjoint).max()
    wrong = np.stack([np.flip(np.cumsum(np.flip(g[:, i]))) for i in range(pm.LANES)], 1)     # lambda = 1: not it
    assert np.abs(wrong - adjoint).max() > 1e-2 * np.abs(adjoint).max()


def test_the_interpreted_kernels_in_every_dtype_are_within_the_table():
    cells = pm.kernel_cells(16, 0.999)
    assert {(c["route"], c["dtype"]) for c in cells} == {(f"{b} {k}", d) for b, k in pm.KERNELS for d in pm.DTYPES}
    assert all(c["within"] for c in cells), [c for c in cells if not c["within"]]
    low = [c for c in cells if c["dtype"] == "bfloat16"]
    assert all(c["forward"] > 1e-4 for c in low)             # the bf16 input's rounding shows: it was applied


def test_a_cell_above_its_row_is_a_finding():
    ok = pm.cell("lru", "torch scan", "bfloat16", 64, 0.99, 1e-3, 1e-3)
    assert ok["within"] and ok["forward_rtol"] == pytest.approx(4 * 2**-7 + 32 * 2**-23 * 64)
    assert not pm.cell("lru", "torch scan", "bfloat16", 64, 0.99, 0.05, 1e-3)["within"]
    assert not pm.cell("lru", "torch scan", "float16", 64, 0.99, 1e-3, 0.05)["within"]


def synthetic() -> dict:
    cells = [pm.cell(k, route, d, L, r, f, f)
             for k, route in (("lru", "torch scan"), ("lru", "jax conv"), ("kernel", "torch triton"))
             for d in pm.DTYPES for L in (16, 256) for r in (0.9, 0.999)
             for f in [{"float32": 1e-6, "bfloat16": 3e-3, "float16": 4e-4}[d]]]
    cells[5]["forward"], cells[5]["within"] = 0.5, False                 # a planted finding
    return {"size": "quick", "sizes": {"kinds": ["lru"], "lengths": [16, 256], "radii": [0.9, 0.999], "loop_max": 256,
                                       "kernel_max": 256, "long": [], "long_radii": []},
            "dtypes": list(pm.DTYPES), "cells": cells, "findings": [c for c in cells if not c["within"]],
            "seconds": 1.0}


def test_the_section_draws_a_heatmap_per_dtype_and_quantity_and_outlines_the_findings(tmp_path):
    data = synthetic()
    figs = section.render_plots(data)
    assert set(figs) == {f"{q}_{d}" for q in ("forward", "gradient") for d in pm.DTYPES}
    fig = figs["forward_bfloat16"]
    assert fig["rows"] == ["torch scan", "jax conv", "torch triton"] and len(fig["columns"]) == 4
    planted = data["cells"][5]
    assert planted["dtype"] == "bfloat16" and fig["marks"] == [[0, 2]]              # lru torch scan, r 0.999, L 16
    assert figs["gradient_bfloat16"]["marks"] == [] and figs["forward_float32"]["marks"] == []
    assert "1 of 12 cells outside" in section.summary(data)
    write_result(tmp_path / "out", section.NAME, data, {"size": "quick", "quick": True, "command": "x"})
    html = render(read_results([tmp_path / "out"], [section.NAME]), (section,), tmp_path / "page").read_text()
    assert "forward relative error, bfloat16" in html and "precision-map-findings" in html
    assert "5.00e-01" in html


def test_the_record_is_a_report_section_file(tmp_path, monkeypatch):
    monkeypatch.setattr(pm, "run", lambda size, progress=None: synthetic())
    path = pm.write(pm.run("quick"), tmp_path / "sections" / "precision_map.json")
    loaded = read_results([path.parent], [section.NAME])
    assert loaded.results and loaded.results[0]["meta"]["config"]["quick"] is True
    with pytest.raises(Exception, match="--out: expected a .json file"):
        pm.write(synthetic(), tmp_path / "map.txt")


def test_parts_run_apart_merge_into_one_map():
    data = synthetic()
    lru = {**data, "cells": [c for c in data["cells"] if c["kind"] == "lru"], "seconds": 2.0}
    kernel = {**data, "cells": [c for c in data["cells"] if c["kind"] == "kernel"], "seconds": 3.0}
    merged = pm.merge([kernel, lru])
    assert [c["kind"] for c in merged["cells"]] == [c["kind"] for c in data["cells"]]     # kinds first, kernels last
    assert merged["findings"] == data["findings"] and merged["seconds"] == 5.0 and merged["parts"] == 2
    with pytest.raises(Exception, match="kinds: expected some of"):
        pm.run("quick", kinds=["mamba"])
