"""The routing aggregator (MoverScore appendix A.2)."""

from __future__ import annotations

import math

import pytest
import torch

from alignscore import AGGREGATORS
from alignscore.aggregators import Routing, route
from alignscore.errors import ConfigError


def _unit(x: torch.Tensor) -> torch.Tensor:
    return x / x.norm(dim=-1, keepdim=True)


def test_identical_layers_route_to_that_vector():
    x = _unit(torch.randn(3, 7, 16))
    out = route(x.unsqueeze(0).expand(5, -1, -1, -1))
    torch.testing.assert_close(out, x, atol=1e-6, rtol=0)


def test_the_outlier_layer_gets_less_weight_than_in_the_mean():
    torch.manual_seed(0)
    a = _unit(torch.randn(32))
    b = _unit(torch.randn(32))
    z = torch.stack([a, a, a, a, b]).view(5, 1, 1, 32)
    v = route(z).view(32)
    mean = z.mean(0).view(32)
    assert (v - a).norm() < (mean - a).norm()  # pulled towards the mode of the four agreeing layers
    # a convex combination of a and b: the residual orthogonal to span(a, b) vanishes
    basis, _ = torch.linalg.qr(torch.stack([a, b], dim=1))
    assert (v - basis @ (basis.T @ v)).norm() < 1e-5


def test_routing_converges():
    torch.manual_seed(2)
    z = _unit(torch.randn(5, 3, 10, 24))
    fixed_point = route(z, tol=0, max_iter=400)
    torch.testing.assert_close(fixed_point, route(z, tol=0, max_iter=200), atol=1e-6, rtol=0)
    # the default stopping rule lands close to the fixed point
    assert (route(z) - fixed_point).abs().max() < 1e-4


def test_epanechnikov_kernel_by_hand():
    """Layers (1, 0), (1, 0), (0, 1), h = 1, two rounds. Round 1: v = the mean (2/3, 1/3), every
    layer within h (-k' = 1), so the mean shift keeps v; k = 1 - d = (7/9, 7/9, 1/9) and
    g = 1/3 + k. Round 2: c = softmax(g) = (a, a, 1) / (2a + 1) with a = e^(2/3), and v moves to
    (2a, 1) / (2a + 1)."""
    z = torch.tensor([[[1.0, 0.0]], [[1.0, 0.0]], [[0.0, 1.0]]], dtype=torch.float64)  # [L, tokens, D]
    a = math.exp(2 / 3)
    want = torch.tensor([[2 * a / (2 * a + 1), 1 / (2 * a + 1)]], dtype=torch.float64)
    torch.testing.assert_close(route(z, kernel="epanechnikov", bandwidth=1.0, max_iter=2, tol=0), want)
    torch.testing.assert_close(route(z, kernel="epanechnikov", bandwidth=1.0, max_iter=1, tol=0),
                               torch.tensor([[2 / 3, 1 / 3]], dtype=torch.float64))


def test_epanechnikov_far_layers_keep_their_vector():
    z = _unit(torch.randn(5, 2, 3, 8))
    out = route(z, kernel="epanechnikov", bandwidth=0.5)
    assert torch.isfinite(out).all()
    far = torch.stack([torch.tensor([[[1.0, 0.0]]]), torch.tensor([[[-1.0, 0.0]]])])  # 2 apart: beyond h = 0.5
    torch.testing.assert_close(route(far[:, 0], kernel="epanechnikov", bandwidth=0.5), torch.tensor([[0.0, 0.0]]))
    with pytest.raises(ConfigError):
        route(z, kernel="cosine")


def test_routing_aggregator_layers_signature_registry():
    agg = AGGREGATORS.build("routing")
    assert isinstance(agg, Routing)
    assert agg.resolve(12).layers == (8, 9, 10, 11, 12)  # "the last five layers" of BERT-base
    assert agg.resolve(6).layers == (2, 3, 4, 5, 6)
    assert agg.resolve(12).signature().startswith("routing(L8,9,10,11,12;gaussian")
    with pytest.raises(ConfigError):
        Routing(layers=(-8,)).resolve(6)
    with pytest.raises(ConfigError):
        Routing(bandwidth=0)
    states = torch.randn(5, 2, 4, 16) * torch.tensor([1.0, 10.0, 100.0, 1.0, 1.0]).view(5, 1, 1, 1)
    out = agg(states)  # layers are normalised first, so the scale of a layer does not dominate
    assert out.shape == (2, 4, 16)
    assert torch.allclose(out, agg(states * 3.0), atol=1e-5)
