"""The heat-box problem: its supremum is the hand-computed limit of the top face's data at an edge
where the faces disagree, its PDE is Laplace's in three variables and its description names the
faces."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from problems.heat_box import heat_box

BOUNDARY = {"x-": "y*z", "x+": "1 + z + sin(3*y)/2", "y-": "x*exp(-x) + z", "y+": "2*z - x",
            "z-": "y*sin(3*x)", "z+": "1 + 2*x - (y - 0.3)**2 + cos(5*x)/5"}


@pytest.fixture(scope="module")
def problem(tmp_path_factory):
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PINNBO_CACHE", str(tmp_path_factory.mktemp("pinnbo-cache")))
        yield heat_box(BOUNDARY, grid=16)


def test_the_supremum_is_the_top_faces_limit_at_its_edge_with_a_cooler_face(problem):
    """On z = 1 the data 1 + 2x − (y − 0.3)² + cos(5x)/5 rise towards x = 1 (2 − sin 5 > 0) and
    peak at y = 0.3: 3 + cos(5)/5 there, where the face x = 1 is at 2 + sin(0.9)/2."""
    assert problem.optimum == pytest.approx(3 + math.cos(5) / 5, abs=1e-8)
    np.testing.assert_allclose(problem.optimum_location, (1.0, 0.3, 1.0), atol=1e-7)
    assert problem.objective(np.asarray(problem.optimum_location)) == problem.optimum
    assert problem.objective(np.array([1.0, 0.3, 1.0])) == pytest.approx((3 + math.cos(5) / 5 + 2 + math.sin(0.9) / 2) / 2)
    assert problem.boundary_continuous is False and problem.sense == "maximize"
    assert "x-='y*z'" in problem.description and "16³" in problem.description


def test_its_pde_is_laplaces_in_three_variables(problem):
    """A harmonic function has zero residual, x² alone 2."""
    residual = problem.pde.compile()
    points = torch.rand(20, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    harmonic = lambda p: p[:, 0] ** 2 + p[:, 1] ** 2 - 2 * p[:, 2] ** 2 + p[:, 0] * p[:, 1] * p[:, 2]  # noqa: E731
    assert float(residual(harmonic, points).abs().max()) < 1e-10
    torch.testing.assert_close(residual(lambda p: p[:, 0] ** 2, points).reshape(-1),
                               torch.full((20,), 2.0, dtype=torch.float64))
    assert problem.pde.minimum_on_boundary(problem.domain.named_bounds)


def test_a_flow_enters_the_pde_and_keeps_the_supremum_on_the_faces(tmp_path, monkeypatch):
    """∇²T − v·∇T: e^{v·x} has zero residual, x² alone 2 − 2 v_x x; the maximum principle still holds."""
    monkeypatch.setenv("PINNBO_CACHE", str(tmp_path))
    carried = heat_box(BOUNDARY, grid=16, velocity=[2, -1.5, 1])
    residual = carried.pde.compile()
    points = torch.rand(20, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    v = torch.tensor([2.0, -1.5, 1.0], dtype=torch.float64)
    assert float(residual(lambda p: torch.exp(p @ v), points).abs().max()) < 1e-10
    torch.testing.assert_close(residual(lambda p: p[:, 0] ** 2, points).reshape(-1), 2 - 4 * points[:, 0])
    assert carried.pde.minimum_on_boundary(carried.domain.named_bounds)
    assert carried.optimum == pytest.approx(3 + math.cos(5) / 5, abs=1e-8)      # the faces' data decide it
    assert "v = (2, -1.5, 1)" in carried.description and carried.metadata["velocity"] == [2.0, -1.5, 1.0]


def test_a_graded_conductivity_enters_the_pde_in_divergence_form(tmp_path, monkeypatch):
    """∇·(k∇T) with k = (1 + x)²: 1/(1 + x) + yz has zero residual, x alone 2(1 + x); the maximum
    principle still holds and the PDE reads as a graded conductor's."""
    monkeypatch.setenv("PINNBO_CACHE", str(tmp_path))
    graded = heat_box(BOUNDARY, grid=16, conductivity="(1 + x)**2")
    residual = graded.pde.compile()
    points = torch.rand(20, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    field = lambda p: 1 / (1 + p[:, 0]) + p[:, 1] * p[:, 2]  # noqa: E731
    assert float(residual(field, points).abs().max()) < 1e-10
    torch.testing.assert_close(residual(lambda p: p[:, 0], points).reshape(-1), 2 * (1 + points[:, 0]))
    assert graded.pde.minimum_on_boundary(graded.domain.named_bounds)
    k, tensor, flow, reaction = graded.pde.divergence_form()
    assert tensor == ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)) and flow == (0.0, 0.0, 0.0)
    assert "k = (1 + x)**2" in graded.description and graded.metadata["conductivity"] == "(1 + x)**2"


def test_a_graded_conductor_carried_by_a_flow_reads_as_both(tmp_path, monkeypatch):
    """∇·(k∇T) − v·∇T with k = (1 + x)²: x has residual 2(1 + x) − v_x, and the PDE reads as the
    graded conductor's with the flow −v beside its divergence; the description writes the equation
    before its coefficients."""
    monkeypatch.setenv("PINNBO_CACHE", str(tmp_path))
    both = heat_box(BOUNDARY, grid=16, conductivity="(1 + x)**2", velocity=[2, -1.5, 1])
    points = torch.rand(20, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    residual = both.pde.compile()
    torch.testing.assert_close(residual(lambda p: p[:, 0], points).reshape(-1), 2 * (1 + points[:, 0]) - 2)
    k, tensor, flow, reaction = both.pde.divergence_form()
    assert tensor == ((1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)) and flow == (-2.0, 1.5, -1.0)
    assert "∇·(k∇T) − v·∇T = 0 (k = (1 + x)**2; v = (2, -1.5, 1))" in both.description


def test_a_reaction_in_a_graded_box_enters_its_divergence_form_and_the_frozen_edges(tmp_path, monkeypatch):
    """∇·(k∇T) + 2T with k = (1 + x)²: (1 + x)^{−1/2} cos(ω ln(1 + x)), ω = √7/2, has zero residual
    (Euler's equation, by hand); the PDE reads back with c = 2 and the model's edge functions freeze
    it along each edge."""
    from pinnbo.models.corners import GradedEdgeShape, jump_shape

    monkeypatch.setenv("PINNBO_CACHE", str(tmp_path))
    gain = heat_box(BOUNDARY, grid=16, conductivity="(1 + x)**2", reaction=2)
    points = torch.rand(20, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(5))
    omega = math.sqrt(7) / 2
    euler = lambda p: (1 + p[:, 0]) ** -0.5 * torch.cos(omega * torch.log(1 + p[:, 0]))  # noqa: E731
    assert float(gain.pde.compile()(euler, points).abs().max()) < 1e-12
    assert gain.pde.divergence_form()[3] == 2.0 and not gain.pde.minimum_on_boundary(gain.domain.named_bounds)
    shape = jump_shape(gain.domain, gain.minimised_pde, gain.boundary_continuous)
    assert isinstance(shape, GradedEdgeShape) and shape.reaction == -2.0        # the minimised PDE's: −(k, c)
    assert "∇·(k∇T) + qT = 0 (k = (1 + x)**2; q = 2)" in gain.description


def test_a_conductivity_tensor_enters_the_pde_with_its_mixed_derivatives(tmp_path, monkeypatch):
    """Σ K_ij T_ij: xy has residual 2 K_xy, x² 2 K_xx; the operator is the tensor's, read back."""
    monkeypatch.setenv("PINNBO_CACHE", str(tmp_path))
    K = [[2.5, 0.8, 0.4], [0.8, 1.5, 0.3], [0.4, 0.3, 1.0]]
    composite = heat_box(BOUNDARY, grid=16, conductivity=K)
    residual = composite.pde.compile()
    points = torch.rand(20, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
    torch.testing.assert_close(residual(lambda p: p[:, 0] * p[:, 1], points).reshape(-1), torch.full((20,), 1.6).double())
    torch.testing.assert_close(residual(lambda p: p[:, 0] ** 2, points).reshape(-1), torch.full((20,), 5.0).double())
    assert composite.pde.constant_operator() == (tuple(map(tuple, K)), (0.0, 0.0, 0.0), 0.0)
    assert composite.pde.minimum_on_boundary(composite.domain.named_bounds)
    assert composite.metadata["conductivity"] == K and "K = [[2.5, 0.8, 0.4]" in composite.description


def test_a_graded_tensor_enters_the_pde_in_divergence_form_and_carries_the_graded_edges(tmp_path, monkeypatch):
    """∇·(K∇T) with K = (1 + x) A: x − 4y has residual ∂k/∂x (A c)_x = 2 − 2 = 0 for heat_box_tensor's
    A, x alone (A e_x)_x = 2 (hand-derived); the PDE reads back as k A, and the model carries the
    graded box's sheared edge functions."""
    from pinnbo.models.corners import CrossEdgeShape, GradedEdgeShape, jump_shape

    monkeypatch.setenv("PINNBO_CACHE", str(tmp_path))
    A = [[2.0, 0.5, 0.3], [0.5, 1.0, -0.2], [0.3, -0.2, 1.5]]
    K = [[f"{a}*(1 + x)" for a in row] for row in A]
    graded = heat_box(BOUNDARY, grid=16, conductivity=K)
    residual = graded.pde.compile()
    points = torch.rand(20, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    assert float(residual(lambda p: p[:, 0] - 4 * p[:, 1], points).abs().max()) < 1e-12
    torch.testing.assert_close(residual(lambda p: p[:, 0], points).reshape(-1), torch.full((20,), 2.0).double())
    k, tensor, flow, reaction = graded.pde.divergence_form()
    scale = float(k.subs({s: 0 for s in k.free_symbols}))
    np.testing.assert_allclose(np.array(tensor) * scale, np.array(A), rtol=1e-12)
    assert flow == (0.0, 0.0, 0.0) and reaction == 0.0
    shape = jump_shape(graded.domain, graded.minimised_pde, graded.boundary_continuous)
    assert isinstance(shape, GradedEdgeShape) and isinstance(shape.shape, CrossEdgeShape)
    assert graded.metadata["conductivity"] == K and "∇·(K∇T) = 0 (K = [['2.0*(1 + x)'" in graded.description
    # carried by a flow besides: the flow's sheared edge functions over k
    carried = heat_box(BOUNDARY, grid=16, conductivity=K, velocity=[1.5, -1, 2])
    assert carried.pde.divergence_form()[2] == (-1.5, 1.0, -2.0)
    shape = jump_shape(carried.domain, carried.minimised_pde, carried.boundary_continuous)
    assert isinstance(shape, GradedEdgeShape) and isinstance(shape.shape, CrossEdgeShape)
    assert any(part.drift != (0.0, 0.0) for part in shape.shape.shapes)


@pytest.mark.parametrize("reaction, location", [(12.0, (1.0, 0.3, 1.0)), (20.0, (0.6, 0.48, 0.6))])
def test_a_reacting_box_carries_the_bessel_edge_functions_and_its_supremum(reaction, location, tmp_path,
                                                                            monkeypatch):
    """∇²T + qT = 0 (benchmarks/kinds/heat_box_reaction*.yaml): the PDE has the zero-order term and
    no maximum principle, the model's edge functions are θ J₀(√q ρ), auto runs pde-gp with them;
    with q = 12 the supremum is still the top face's limit at its edge, with q = 20 it is inside,
    above every face's data."""
    from pinnbo.models.corners import EdgeShape, jump_shape
    from pinnbo.optimizers import choice_for

    monkeypatch.setenv("PINNBO_CACHE", str(tmp_path))
    box = heat_box(BOUNDARY, grid=48, reaction=reaction)
    assert box.metadata["reaction"] == reaction and f"q = {reaction:g}" in box.description
    assert not box.pde.minimum_on_boundary(box.domain.named_bounds)
    assert jump_shape(box.domain, box.minimised_pde, box.boundary_continuous) == \
        EdgeShape(wavenumber=(math.sqrt(reaction),) * 3)
    choice = choice_for(box)
    assert choice.method == "pde-gp" and "edges' functions" in choice.reason
    np.testing.assert_allclose(box.optimum_location, location, atol=0.03)
    if reaction == 12.0:
        assert box.optimum == pytest.approx(3 + math.cos(5) / 5, abs=1e-8)
    else:
        assert box.optimum > 1.5 * (3 + math.cos(5) / 5)
