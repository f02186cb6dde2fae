"""Synthetic tasks: Shift and ContextShift for DLR, LRU and RotRNN at a reduced length (claim D4).

The experiment is `linrnn.experiments.tasks.run` (rows of measurements only); this module adds the
figures' descriptions (plain data, drawn when the page renders) and names the template. The verdict
on D4, with its thresholds, is the ledger's (`linrnn.reports.ledger.settle_d4`), computed from the
rows when the page renders, so `linrnn report --from` re-settles it.
"""

from __future__ import annotations

from linrnn.experiments.tasks import TASKS, run
from linrnn.reports import plots
from linrnn.reports.ledger import FAILS_R2, SOLVED_R2

NAME = "tasks"
TITLE = "Synthetic tasks: Shift and ContextShift (claim D4)"
TEMPLATE = "tasks.html.j2"
LEAD = ("r2",)          # figures shown above the section's details (`render`)

COLOURS = {"dlr": "tab:blue", "lru": "tab:orange", "rotrnn": "tab:green"}


def compute(quick: bool, progress) -> tuple[dict, dict]:
    data, config = run(quick, progress)
    data["plots"] = figures(data["rows"])
    return data, config


def summary(data: dict) -> str:
    parts = []
    for task in TASKS:
        models = {}
        for r in data["rows"]:
            if r["task"] == task and r["status"] == "ok" and isinstance(r.get("r2"), (int, float)):
                models.setdefault(r["model"], []).append(r["r2"])
        diverged = sum(r["task"] == task and r["status"] != "ok" for r in data["rows"])
        if models or diverged:
            parts.append(f"{task}: " + ", ".join(f"{m} {sum(v) / len(v):.3f}" for m, v in models.items())
                         + (f" ({diverged} run(s) diverged)" if diverged else ""))
    return "Final validation R\u00b2, mean over seeds: " + ("; ".join(parts) or "no runs") + "."


def figures(rows: list[dict]) -> dict:
    r2, loss = [], []
    for task in TASKS:
        r2_items = [plots.series(f"{r['model']} seed {r['seed']}", [e["step"] for e in r["evaluations"]],
                                 [e["r2"] for e in r["evaluations"]], COLOURS.get(r["model"], "C7"), marker="o")
                    for r in rows if r["task"] == task and r.get("evaluations")]
        loss_items = [plots.series(f"{r['model']} seed {r['seed']}", r["train_loss"]["step"], r["train_loss"]["loss"],
                                   COLOURS.get(r["model"], "C7"))
                      for r in rows if r["task"] == task and (r.get("train_loss") or {}).get("step")]
        r2.append(plots.panel(task, "optimiser step", "validation R^2", r2_items, ylim=(-0.1, 1.02),
                              hlines=[plots.hline(SOLVED_R2, "solved"), plots.hline(FAILS_R2, "fails", line=":")]))
        loss.append(plots.panel(task, "optimiser step", "training MSE (window means)", loss_items, yscale="log"))
    return {"r2": plots.figure("validation R^2 against training step, per task and model "
                               "(dashed: solved, dotted: fails)", r2),
            "loss": plots.figure("training loss against step, per task and model (log scale)", loss)}
