"""The GPU check: `linrnn gpucheck`'s steps on a lent GPU (environment, crosscheck, kernels, mamba, bandwidth,
sweep).

The experiment is `linrnn.experiments.gpucheck`, which writes its own DIR/gpucheck.json in this report's
results format as it goes (so a run cut short by its time limit still renders); `linrnn report --from
DIR` renders it with this module's template. Inside `linrnn report`, `compute` runs the same check where
PyTorch sees a CUDA device and otherwise records that it was not run here, and how to run it.
"""

from __future__ import annotations

NAME = "gpucheck"
TITLE = "GPU check: the matrix, the kernels and the sweep on a GPU"
TEMPLATE = "gpucheck.html.j2"

BUDGET_S = 420.0          # the command's default: 7 of the 8 minutes a lent GPU's script allows


def compute(quick: bool, progress) -> tuple[dict, dict]:
    import torch

    from linrnn.experiments import gpucheck

    if not torch.cuda.is_available():
        return ({"not_run": f"no CUDA device visible to PyTorch {torch.__version__} on this machine",
                 "command": "linrnn gpucheck --out DIR",
                 "render": "linrnn report --from DIR"}, {"device": "cpu"})
    progress(0, 1, "gpucheck")
    data = gpucheck.check("cuda", quick, BUDGET_S)
    progress(1, 1, "done")
    return data, {"device": "cuda", "profile": data["profile"], "budget_s": data["budget_s"]}


def summary(data: dict) -> str:
    if data.get("not_run"):
        return f"Not run here: {data['not_run']}."
    cc = ((data.get("steps") or {}).get("crosscheck") or {}).get("result") or {}
    text = f"Device {data.get('device')}, profile {data.get('profile')}: " + (
        "finished." if data.get("finished") else "did not finish.")
    if cc.get("comparisons"):
        text += (f" Cross-check on the device: {cc.get('failed', 0)} of {cc['comparisons']} comparisons exceed the "
                 "tolerance.")
    return text
