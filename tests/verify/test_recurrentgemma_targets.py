"""RecurrentGemma's RG-LRU layers as conform targets (issue 52; verify/conform_recurrentgemma*.py): the adapters
carry a bundle into the package's layers faithfully, so the float32 battery conforms on a short ladder, and a wrong
mapping (the decay's sign) is caught. The full battery's findings are stored in reports/results/conform/ and
checked by tests/reports/test_conformance.py."""

import pytest

from linrnn.verify import conform
from linrnn.verify.conform_targets import unavailable

F32, LENGTHS = ("float32",), (1, 8)


def needs(target: str):
    why = unavailable(target)
    if why:
        pytest.skip(why)


@pytest.mark.parametrize("target", ["recurrentgemma-rglru-torch", "recurrentgemma-rglru-jax"])
def test_the_layers_conform_in_float32_on_a_short_ladder(target):
    needs(target)
    if target.endswith("jax"):            # JAX compiles each shape: the output, state and packing checks only
        battery = conform.battery(target, "rglru", "float32", LENGTHS, long_length=64, very_long_length=0)
        checks = [battery.one(name) for name in ("impulse", "random L=8", "state hand-over", "packing",
                                                 "variant blocks=3")]
    else:
        checks = conform.run(target, "rglru", F32, LENGTHS, long_length=64, very_long_length=0).checks
    assert all(c.status in ("pass", "n/a") for c in checks), [c.line() for c in checks if c.status == "fail"]
    assert {c.name for c in checks if c.status == "n/a"} <= {"bidirectional", "parameter gradient", "step", "padding",
                                                             "variant blocks=3, bidirectional=true"}


def test_a_decay_of_the_wrong_sign_is_caught(monkeypatch):
    """The adapter's a_param = -Lambda planted as +Lambda: sigma(-Lambda) is another decay, the outputs fail."""
    target = "recurrentgemma-rglru-torch"
    needs(target)
    from linrnn.verify import conform_recurrentgemma_torch as adapter

    right = adapter.peer_arrays
    monkeypatch.setattr(adapter, "peer_arrays",
                        lambda bundle, *a, **k: right({**bundle, "Lambda": -bundle["Lambda"]}, *a, **k))
    battery = conform.battery(target, "rglru", "float32", LENGTHS, long_length=64, very_long_length=0)
    assert battery.one("random L=8").status == "fail"
