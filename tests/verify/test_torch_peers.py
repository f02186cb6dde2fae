"""The peers (`linrnn.verify.peers_torch`): each builds at (H, N) and maps u (B L H) to y (B L H).

They are contenders for time and memory only, so no output is compared with ours here; what is
checked is the contract the benchmarks rely on (shapes, float32, seeding, differentiable, clear errors).
"""

import pytest
import torch

from linrnn.base.errors import LinrnnError
from linrnn.verify import peers_torch as peers


@pytest.mark.parametrize("name", list(peers.PEERS))
def test_a_peer_maps_BLH_to_BLH_and_differentiates(name):
    pytest.importorskip(peers.PEERS[name][1], reason=f"{name} is not installed (the extra linrnn[peers])")
    layer = peers.make_layer(name, 8, 4, seed=3)
    again = peers.make_layer(name, 8, 4, seed=3)
    u = torch.randn(2, 5, 8, requires_grad=True)
    y = layer(u)
    assert y.shape == (2, 5, 8) and y.dtype == torch.float32 and bool(torch.isfinite(y).all())
    assert torch.equal(y, again(u))                                   # the seed decides the parameters
    y.sum().backward()
    assert u.grad is not None and bool(torch.isfinite(u.grad).all())


def test_bad_requests_are_one_line_errors():
    with pytest.raises(LinrnnError, match="peer: expected one of s5-pytorch, lru-pytorch"):
        peers.missing_reason("s4")
    name = next((n for n in peers.PEERS if peers.missing_reason(n) is None), None)
    if name is None:
        pytest.skip("no peer installed (the extra linrnn[peers])")
    with pytest.raises(LinrnnError, match="dtype: expected torch.float32"):
        peers.make_layer(name, 8, 4, dtype=torch.float64)
    with pytest.raises(LinrnnError, match=r"u: expected shape \(B, L, 8\)"):
        peers.make_layer(name, 8, 4)(torch.zeros(2, 5, 3))
