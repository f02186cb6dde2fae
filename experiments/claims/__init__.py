"""The experiments that settle the papers' empirical claims at the scale this machine allows: the registry.

Each experiment is one module of this package that holds its jobs, controls and scale, and the claims it settles with
their settle functions (`Experiment.settles`; the rules, `linrnn.experiments.decide.evidence`): a claim's runs, rule
and record are read in one file, and the ledger (`linrnn.reports.ledger`) takes its wiring from `EXPERIMENTS` alone.
How an experiment runs and what its record holds: `runner.py`; the papers' scale of the same experiments:
`full_scale.py`; the command `linrnn experiment`: `command.py`; where its jobs run (this process, local worker
processes, a SLURM cluster): `linrnn.tasks.sweep`.

    norm-position           D8      experiments/claims/norm_position.py
    long-shift              D2      experiments/claims/long_shift.py
    synthetic-tasks         D4      experiments/claims/synthetic_tasks.py
    norms-listops           R8      experiments/claims/norms_listops.py
    subtrees-segmentation   D5      experiments/claims/subtrees_segmentation.py
    lra-reduced             R6, D1  experiments/claims/lra_reduced.py
    speech                  R7, D6  experiments/claims/speech.py

and one that asks a question of this project's own, beside the papers' claims (no claim: the ledger settles nothing
from it):

    synthetic-gated         -       experiments/claims/synthetic_gated.py (the RG-LRU on D4's tasks)

A new experiment: docs/architecture.md, "How to add an experiment".
"""

from __future__ import annotations

from linrnn.experiments.claims import (long_shift, lra_reduced, norm_position, norms_listops, speech,
                                       subtrees_segmentation, synthetic_gated, synthetic_tasks)
from linrnn.experiments.claims.runner import Experiment

EXPERIMENTS: dict[str, Experiment] = {m.EXPERIMENT.name: m.EXPERIMENT for m in (
    norm_position, long_shift, synthetic_tasks, norms_listops, subtrees_segmentation, lra_reduced, speech,
    synthetic_gated)}
