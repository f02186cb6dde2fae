"""Generation speed of one DLR-sized batch (B = 16, L = 4096); run with `pytest --benchmark -s`.

Budget: the cheap tasks must take well under 100 ms per batch so that data never slow training;
MIPS (a causal argmax over about B L^2 / 2 scores) and Solve (a batched SVD) get 1 s.
"""

from __future__ import annotations

import json
import platform
import time

import pytest

from linrnn.tasks.synthetic import TASKS, make_task

BUDGET_S = {name: 1.0 if name in ("mips", "solve") else 0.1 for name in TASKS}


@pytest.mark.bench
@pytest.mark.parametrize("name", sorted(TASKS))
def test_batch_generation_time(name, record_property):
    task = make_task(name, 4096, seed=0, batch_size=16, dtype="float32")
    task.batch(0)  # warm-up: caches of the fixed variants, first-touch allocations
    times = []
    for index in range(1, 6):
        start = time.perf_counter()
        task.batch(index)
        times.append(time.perf_counter() - start)
    record = {"task": name, "B": 16, "L": 4096, "dtype": "float32", "device": platform.processor() or "cpu",
              "mode": "numpy", "best_s": min(times), "median_s": sorted(times)[2]}
    record_property("benchmark", record)
    print(json.dumps(record))
    assert record["median_s"] < BUDGET_S[name], record
