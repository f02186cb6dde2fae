"""The learning-rate schedule (tasks/schedule.py) against the formula of docs/training.md ("How a run is
described", schedule): of a run of S steps with W warm-up steps, step s (0-based) takes the factor (s + 1) / W
while s < W, then 1 (constant) or (1 + cos(pi (s - W) / (S - W))) / 2 (cosine)."""

from __future__ import annotations

import math

import pytest

from linrnn.tasks.schedule import lr_factor

S, W = 20, 4


def documented(s: int, schedule: str) -> float:
    """docs/training.md's factor, written out again."""
    if s < W:
        return (s + 1) / W
    return 1.0 if schedule == "constant" else (1 + math.cos(math.pi * (s - W) / (S - W))) / 2


@pytest.mark.parametrize("schedule", ["cosine", "constant"])
def test_the_schedule_is_the_documented_formula_at_its_turning_points(schedule):
    """Steps 0 and 1, the last warm-up step W - 1, the first after it W, the last step S - 1 and the end S."""
    for s in (0, 1, W - 1, W, S - 1, S):
        assert lr_factor(s, S, W, schedule) == documented(s, schedule), s        # the same operations: exactly equal
    assert lr_factor(0, S, W, schedule) > 0, "step 0 must move the parameters (a rate of 0 wastes the first step)"
    assert lr_factor(W - 1, S, W, schedule) == 1.0, "the warm-up ends at the full rate"


def test_warm_up_rises_and_cosine_falls_step_by_step():
    factors = [lr_factor(s, S, W, "cosine") for s in range(S + 1)]
    assert all(a < b for a, b in zip(factors[:W], factors[1:W]))                        # the warm-up rises
    assert all(a > b for a, b in zip(factors[W:], factors[W + 1:]))                     # then the cosine falls
    assert factors[W - 1] == factors[W] == 1.0 and factors[S] == 0.0 < factors[S - 1]
    assert lr_factor(0, S, 0, "cosine") == 1.0, "no warm-up: the first step takes the full rate"
