"""The eleven DLR synthetic tasks: each target against its definition, written here as plain loops.

The loops read the inputs of a float64 batch back (the base signal, markers, the [A | B] layout, the
queries/keys/values) and recompute the target from docs/tasks.md without NumPy vector operations, so
a slip in an index, an order or an axis of the vectorised generators shows up as a mismatch.
"""

from __future__ import annotations

import math
from dataclasses import astuple

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from linrnn.base.errors import LinrnnError
from linrnn.base.tolerance import assert_close
from linrnn.tasks.synthetic import TASKS, Batch, last_outputs, make_task


def float64_batch(name: str, length: int, batch_size: int = 3, seed: int = 7, index: int = 0) -> Batch:
    return make_task(name, length, seed=seed, batch_size=batch_size, dtype="float64").batch(index)


def signal(batch: Batch, b: int, start: int, stop: int) -> list[float]:
    """Channel 0 of sample b at positions start .. stop-1, as Python floats."""
    return [float(batch.inputs[b, l, 0]) for l in range(start, stop)]


# ---------------------------------------------------------------------------------------------
# Targets against their definitions


@pytest.mark.parametrize("length", [8, 13, 24])
def test_shift_channel_h_is_the_input_delayed_by_s_h(length):
    batch = float64_batch("shift", length)
    shifts = [int(s) for s in np.linspace(0, length - length / 8, 8)]  # DLR: int(linspace(...))
    for b in range(3):
        x = signal(batch, b, 0, length)
        for h, s in enumerate(shifts):
            expected = [x[l - s] if l >= s else 0.0 for l in range(length)]
            assert batch.targets[b, :, h].tolist() == expected, f"sample {b}, shift {h} (s = {s})"


def test_cumsum_is_the_running_sum_over_sqrt_l_plus_1():
    batch = float64_batch("cumsum", 17)
    for b in range(3):
        x = signal(batch, b, 0, 17)
        expected, total = [], 0.0
        for l in range(17):
            total += x[l]
            expected.append(total / math.sqrt(l + 1))
        # A running sum is the recurrence s_l = s_{l-1} + x_l: eigenvalue 1, memory L.
        assert_close(f"cumsum sample {b}", expected, batch.targets[b, :, 0], "forward", "float64", 17, 1.0)


def test_cummax_is_the_running_maximum():
    batch = float64_batch("cummax", 17)
    for b in range(3):
        x = signal(batch, b, 0, 17)
        expected = [max(x[: l + 1]) for l in range(17)]
        assert batch.targets[b, :, 0].tolist() == expected


def test_reverse_reads_x_then_zeros_and_answers_x_backwards():
    batch = float64_batch("reverse", 11)
    for b in range(3):
        x = signal(batch, b, 0, 11)
        assert signal(batch, b, 11, 22) == [0.0] * 11
        assert batch.targets[b, :, 0].tolist() == [x[11 - 1 - i] for i in range(11)]


def test_sort_orders_by_distance_from_x0_stably():
    batch = float64_batch("sort", 15)
    for b in range(3):
        x = signal(batch, b, 0, 15)
        assert signal(batch, b, 15, 30) == [0.0] * 15
        order = sorted(range(15), key=lambda j: abs(x[j] - x[0]))  # Python's sort is stable
        assert batch.targets[b, :, 0].tolist() == [x[j] for j in order]
        assert batch.targets[b, 0, 0] == x[0]
    # Not a plain ascending sort: it would differ on some sample.
    assert any(batch.targets[b, :, 0].tolist() != sorted(signal(batch, b, 0, 15)) for b in range(3))


def test_sort_keeps_input_order_among_equal_distances():
    # x_0 = 0 and x_j in {+-1/2, +-1}: the distances tie in two large groups, and within each group
    # the order must be that of the input (an unstable sort of 200 values breaks it).
    from linrnn.tasks.synthetic import atomic

    x = [0.0] + [[-1.0, -0.5, 0.5, 1.0][(7 * j) % 4 if j % 3 else j % 4] for j in range(1, 200)]

    class TiedSignal:  # stands in for the Generator: the "random" signal is x, already normalised
        def standard_normal(self, shape):
            return np.tile(np.array(x), (shape[0], 1))

    _, targets = atomic.sort(TiedSignal(), 200, 1)
    near = [v for v in x[1:] if abs(v) == 0.5]
    far = [v for v in x[1:] if abs(v) == 1.0]
    assert targets[0, :, 0].tolist() == [0.0] + near + far


@pytest.mark.parametrize("name", ["masked_select", "masked_select_fixed"])
def test_masked_select_copies_the_marked_values_in_order(name):
    noise, m = 20, 32
    batch = float64_batch(name, noise)
    assert batch.inputs.shape[1] == m + noise + m
    for b in range(3):
        marked = [l for l in range(m + noise + m) if batch.inputs[b, l, 1] == 1.0]
        assert all(batch.inputs[b, l, 1] in (0.0, 1.0) for l in range(m + noise + m))
        assert len(marked) == m and marked[-1] < m + noise, f"sample {b}: marked {marked}"
        assert signal(batch, b, m + noise, m + noise + m) == [0.0] * m
        assert batch.targets[b, :, 0].tolist() == [float(batch.inputs[b, l, 0]) for l in marked]


@pytest.mark.parametrize("name", ["solve", "solve_fixed"])
@pytest.mark.parametrize("length", [3, 8, 35, 50])
def test_solve_lays_out_an_orthogonal_system_whose_solution_is_the_target(name, length):
    n = 0
    while (n + 1) ** 2 + 2 * (n + 1) <= length:  # largest N with N^2 + 2N <= L
        n += 1
    batch = float64_batch(name, length)
    assert batch.targets.shape == (3, n, 1)
    for b in range(3):
        z = signal(batch, b, 0, length)
        a = [[z[i * (n + 1) + j] for j in range(n)] for i in range(n)]
        rhs = [z[i * (n + 1) + n] for i in range(n)]
        assert z[n * (n + 1) :] == [0.0] * (length - n * (n + 1))
        x = batch.targets[b, :, 0].tolist()
        gram = [[sum(a[i][t] * a[j][t] for t in range(n)) for j in range(n)] for i in range(n)]
        identity = [[1.0 if i == j else 0.0 for j in range(n)] for i in range(n)]
        assert_close(f"A A^T, sample {b}", identity, gram, "identity", "float64")
        assert_close(f"|X|, sample {b}", 1.0, math.sqrt(sum(v * v for v in x)), "identity", "float64")
        ax = [sum(a[i][j] * x[j] for j in range(n)) for i in range(n)]
        assert_close(f"A X vs B, sample {b}", rhs, ax, "identity", "float64")


def test_context_shift_header_encodes_the_delay_of_the_whole_sequence():
    length, batch_size = 10, 64
    batch = float64_batch("context_shift", length, batch_size=batch_size)
    seen = set()
    for b in range(batch_size):
        z = signal(batch, b, 0, length)
        s = round(math.atan2(z[1], z[0]) * length / (2 * math.pi)) % length
        header = [math.cos(2 * math.pi * s / length), math.sin(2 * math.pi * s / length)]
        assert_close(f"header, sample {b}", header, z[:2], "identity", "float64")
        assert 0 <= s <= length - 3, f"sample {b}: shift {s}"
        seen.add(s)
        assert batch.targets[b, :, 0].tolist() == [z[l - s] if l >= s else 0.0 for l in range(length)]
    assert seen == set(range(length - 2)), f"shifts seen in 64 samples: {sorted(seen)}"


def test_mips_answers_the_value_of_the_best_earlier_key():
    length, d = 12, 4
    batch = float64_batch("mips", length, batch_size=2)
    for b in range(2):
        row = batch.inputs[b].tolist()
        q = [r[0:d] for r in row]
        k = [r[d : 2 * d] for r in row]
        v = [r[2 * d : 3 * d] for r in row]
        for vectors in (q, k, v):
            norms = [math.sqrt(sum(c * c for c in u)) for u in vectors]
            assert_close(f"norms of q, k, v, sample {b}", [1.0] * length, norms, "identity", "float64")
        for i in range(length):
            scores = [sum(q[i][c] * k[j][c] for c in range(d)) for j in range(i + 1)]
            best = scores.index(max(scores))
            assert batch.targets[b, i].tolist() == v[best], f"sample {b}, query {i}: expected key {best}"


# ---------------------------------------------------------------------------------------------
# Common format: shapes, dtypes, masks, positions, normalisation


EXPECTED_SHAPE = {  # L -> (L_in, L_out, d_in, d_out), from docs/tasks.md
    "shift": lambda L: (L, L, 3, 8),
    "cumsum": lambda L: (L, L, 3, 1),
    "cummax": lambda L: (L, L, 3, 1),
    "reverse": lambda L: (2 * L, L, 3, 1),
    "sort": lambda L: (2 * L, L, 3, 1),
    "masked_select_fixed": lambda L: (L + 64, 32, 4, 1),
    "masked_select": lambda L: (L + 64, 32, 4, 1),
    "solve_fixed": lambda L: (L, math.isqrt(L + 1) - 1, 3, 1),
    "solve": lambda L: (L, math.isqrt(L + 1) - 1, 3, 1),
    "context_shift": lambda L: (L, L, 3, 1),
    "mips": lambda L: (L, L, 14, 4),
}

# Where the L-infinity-normalised base signal sits in channel 0 (None: the task has none).
SIGNAL_SPAN = {
    "shift": lambda L: (0, L),
    "cumsum": lambda L: (0, L),
    "cummax": lambda L: (0, L),
    "reverse": lambda L: (0, L),
    "sort": lambda L: (0, L),
    "masked_select_fixed": lambda L: (0, L + 32),
    "masked_select": lambda L: (0, L + 32),
    "context_shift": lambda L: (2, L),
    "solve_fixed": None,
    "solve": None,
    "mips": None,
}


def test_registry_names_every_task_once():
    assert sorted(TASKS) == sorted(EXPECTED_SHAPE)
    assert {name: spec.name for name, spec in TASKS.items()} == {name: name for name in TASKS}


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(sorted(TASKS)),
    extra=st.integers(0, 40),
    batch_size=st.integers(1, 3),
    seed=st.integers(0, 2**32),
    dtype=st.sampled_from(["float32", "float64"]),
)
def test_shapes_dtypes_masks_positions_and_normalisation(name, extra, batch_size, seed, dtype):
    length = TASKS[name].min_length + extra
    task = make_task(name, length, seed=seed, batch_size=batch_size, dtype=dtype)
    batch = task.batch(0)
    l_in, l_out, d_in, d_out = EXPECTED_SHAPE[name](length)
    assert astuple(task.shape) == (l_in, l_out, d_in, d_out)
    assert batch.inputs.shape == (batch_size, l_in, d_in)
    assert batch.targets.shape == (batch_size, l_out, d_out)
    assert batch.mask.shape == (batch_size, l_out) and batch.mask.dtype == np.bool_ and batch.mask.all()
    assert batch.inputs.dtype == np.dtype(dtype) and batch.targets.dtype == np.dtype(dtype)
    assert np.all(np.isfinite(batch.inputs)) and np.all(np.isfinite(batch.targets))
    angles = [2 * math.pi * l / l_in for l in range(l_in)]  # positions use the actual input length L_in
    expected = [[[math.cos(angle), math.sin(angle)] for angle in angles]] * batch_size
    # NumPy's cos/sin may be a SIMD build an ulp away from libm's (math.cos): an identity, not bit equality.
    assert_close("positional channels", expected, batch.inputs[..., -2:], "identity", dtype)
    if SIGNAL_SPAN[name] is not None:
        start, stop = SIGNAL_SPAN[name](length)
        peak = np.abs(batch.inputs[:, start:stop, 0]).max(axis=1)
        assert peak.tolist() == [1.0] * batch_size


def test_float32_batch_is_the_float64_batch_rounded_once():
    for name in TASKS:
        b32 = make_task(name, 40, seed=3, batch_size=2, dtype="float32").batch(4)
        b64 = make_task(name, 40, seed=3, batch_size=2, dtype=np.float64).batch(4)
        assert np.array_equal(b32.inputs, b64.inputs.astype(np.float32)), name
        assert np.array_equal(b32.targets, b64.targets.astype(np.float32)), name


def test_model_answer_is_read_from_the_last_l_out_outputs():
    task = make_task("reverse", 5, batch_size=2)
    outputs = np.arange(2 * 10 * 1).reshape(2, 10, 1)  # (B L_in d_out)
    assert last_outputs(outputs, task.shape.L_out).tolist() == outputs[:, 5:].tolist()


# ---------------------------------------------------------------------------------------------
# Seeds and streams


def batches_equal(a: Batch, b: Batch) -> bool:
    return all(np.array_equal(x, y) for x, y in zip((a.inputs, a.targets, a.mask), (b.inputs, b.targets, b.mask)))


@pytest.mark.parametrize("name", sorted(TASKS))
def test_same_seed_and_index_same_batch_else_different(name):
    batch = make_task(name, 24, seed=5, batch_size=2).batch(3)
    assert batches_equal(batch, make_task(name, 24, seed=5, batch_size=2).batch(3))
    assert not np.array_equal(batch.inputs, make_task(name, 24, seed=6, batch_size=2).batch(3).inputs)
    assert not np.array_equal(batch.inputs, make_task(name, 24, seed=5, batch_size=2).batch(4).inputs)


def test_batch_k_does_not_depend_on_the_batches_before_it():
    stream = iter(make_task("cumsum", 16, seed=11, batch_size=2))
    streamed = [next(stream) for _ in range(6)]
    fresh = make_task("cumsum", 16, seed=11, batch_size=2)
    assert batches_equal(fresh.batch(5), streamed[5])  # drawn directly, nothing before it
    assert batches_equal(next(fresh.stream(start=4)), streamed[4])  # a resumed stream
    assert all(not np.array_equal(streamed[k].inputs, streamed[k + 1].inputs) for k in range(5))


def test_fixed_variants_share_their_draw_across_samples_seeds_and_batches():
    markers = [make_task("masked_select_fixed", 30, seed=s, batch_size=3).batch(k).inputs[..., 1]
               for s, k in [(0, 0), (1, 0), (1, 9)]]
    assert all(np.array_equal(m, markers[0]) for m in markers) and all(
        np.array_equal(markers[0][b], markers[0][0]) for b in range(3))
    variable = make_task("masked_select", 30, seed=0, batch_size=3).batch(0).inputs[..., 1]
    assert not np.array_equal(variable[0], variable[1])

    n = 5  # L = 35 gives N_s = 5
    systems = [make_task("solve_fixed", 35, seed=s, batch_size=3).batch(k).inputs[:, : n * (n + 1), 0]
               .reshape(3, n, n + 1) for s, k in [(0, 0), (2, 0), (2, 7)]]
    a = systems[0][0, :, :n]
    assert all(np.array_equal(system[b, :, :n], a) for system in systems for b in range(3))
    assert not np.array_equal(systems[0][0, :, n], systems[0][1, :, n])  # X, hence B, is redrawn
    variable = make_task("solve", 35, seed=0, batch_size=3).batch(0).inputs[:, : n * (n + 1), 0]
    assert not np.array_equal(variable[0], variable[1])


# ---------------------------------------------------------------------------------------------
# Bad input: each message names the field, what was expected and what was found


BAD_ARGUMENTS = [
    (dict(name="shifts"), ["task", "expected one of", ", ".join(TASKS), "found 'shifts'"]),
    (dict(name=None), ["task", "expected one of", "found None"]),
    (dict(length=0), ["length", "expected a positive integer", "found 0"]),
    (dict(length=-4), ["length", "expected a positive integer", "found -4"]),
    (dict(length=4.0), ["length", "expected a positive integer", "found 4.0 (float)"]),
    (dict(length=True), ["length", "expected a positive integer", "found True (bool)"]),
    (dict(name="shift", length=7), ["length", "expected an integer >= 8 for task 'shift'", "found 7"]),
    (dict(name="cumsum", length=1), ["length", "expected an integer >= 2 for task 'cumsum'", "found 1"]),
    (dict(name="solve", length=2), ["length", "expected an integer >= 3 for task 'solve'", "found 2"]),
    (dict(name="context_shift", length=3), ["length", ">= 4 for task 'context_shift'", "found 3"]),
    (dict(batch_size=0), ["batch_size", "expected a positive integer", "found 0"]),
    (dict(seed=-1), ["seed", "expected an integer >= 0", "found -1"]),
    (dict(seed="1"), ["seed", "expected an integer >= 0", "found '1' (str)"]),
    (dict(dtype="float16"), ["dtype", "expected one of float32, float64", "found 'float16'"]),
    (dict(dtype="nonsense"), ["dtype", "expected one of float32, float64", "found 'nonsense'"]),
    (dict(dtype=None), ["dtype", "expected one of float32, float64", "found None"]),
]


@pytest.mark.parametrize("arguments, fragments", BAD_ARGUMENTS, ids=lambda v: str(v) if isinstance(v, dict) else "")
def test_bad_arguments_raise_linrnn_error_naming_field_expected_and_found(arguments, fragments):
    call = dict(name="cumsum", length=16, seed=0, batch_size=2, dtype="float32") | arguments
    with pytest.raises(LinrnnError) as raised:
        make_task(call.pop("name"), **call)
    for fragment in fragments:
        assert fragment in str(raised.value)


def test_negative_batch_index_raises_linrnn_error():
    task = make_task("cumsum", 16)
    with pytest.raises(LinrnnError, match=r"index: expected an integer >= 0, found -1"):
        task.batch(-1)
    with pytest.raises(LinrnnError, match=r"start: expected an integer >= 0, found -2"):
        next(task.stream(start=-2))


# ---------------------------------------------------------------------------------------------
# The two higher-order (classification) tasks


def test_listops_subtrees_batch_scores_every_subtree_value_and_nothing_else():
    from linrnn.tasks.data.listops_subtrees import VOCABULARY
    from linrnn.tasks.synthetic import IGNORE_INDEX

    batch = make_task("listops_subtrees", 40, seed=2, batch_size=3).batch(1)
    assert batch.inputs.shape == (3, 40, 1) and batch.inputs.dtype == np.int64
    assert batch.targets.shape == (3, 40) and batch.targets.dtype == np.int64
    assert (batch.mask == (batch.targets != IGNORE_INDEX)).all()
    for b in range(3):
        tokens = [VOCABULARY[i] for i in batch.inputs[b, :, 0] if i != 0]  # <pad> is id 0, after the tree
        assert 20 < len(tokens) <= 40
        stack, expected = [], {}
        for position, token in enumerate(tokens):  # a hand-written evaluator
            if token.startswith("["):
                stack.append((token, []))
            elif token == "X":
                op, args = stack.pop()
                ordered, mid = sorted(args), len(args) // 2
                median = ordered[mid] if len(args) % 2 else (ordered[mid - 1] + ordered[mid]) // 2
                expected[position] = {"[MIN": min(args), "[MAX": max(args), "[SM": sum(args) % 10, "[MED": median}[op]
                if stack:
                    stack[-1][1].append(expected[position])
            else:
                stack[-1][1].append(int(token))
        scored = {int(p): int(batch.targets[b, p]) for p in np.flatnonzero(batch.mask[b])}
        assert scored == expected


def test_pathfinder_segmentation_batch_shapes_classes_and_lengths():
    task = make_task("pathfinder_segmentation", 32 * 32, seed=0, batch_size=1, dtype="float64")
    batch = task.batch(0)
    assert batch.inputs.shape == (1, 1024, 1) and batch.inputs.dtype == np.float64
    assert batch.inputs.min() == -1.0 and batch.inputs.max() == 1.0  # (x / 255 - 0.5) / 0.5
    assert batch.targets.shape == (1, 1024) and set(np.unique(batch.targets).tolist()) <= {0, 1, 2}
    assert batch.mask.all() and astuple(task.shape) == (1024, 1024, 1, 3)
    with pytest.raises(LinrnnError, match=r"length: expected one of 1024, 4096, 16384, 65536, 262144"):
        make_task("pathfinder_segmentation", 2000)


def test_classification_metrics_ignore_unscored_positions_and_weigh_classes():
    from linrnn.tasks.metrics import accuracy, balanced_accuracy, macro_f1

    labels = np.array([[0, 0, 0, 1, -100], [2, 2, 0, 0, -100]])
    logits = np.eye(3)[np.array([[0, 0, 0, 0, 1], [2, 0, 0, 0, 2]])]  # (B L C)
    assert accuracy(logits, labels) == 6 / 8
    assert balanced_accuracy(logits, labels) == (5 / 5 + 0 / 1 + 1 / 2) / 3
    f1 = {0: 2 * 5 / (2 * 5 + 2 + 0), 1: 0.0, 2: 2 * 1 / (2 * 1 + 0 + 1)}
    assert macro_f1(logits, labels) == sum(f1.values()) / 3
