"""Tests for pinnbo.pde: the compiled residual against hand-written autograd, analytic solutions,
differentiability for training, and declaration errors that name the offending symbol."""

from __future__ import annotations

import math
import os
import subprocess
import sys

import pytest
import sympy as sp
import torch

from pinnbo.pde import PDE, PDEError

x, y, z, k = sp.symbols("x y z k")
T2 = sp.Function("T")(x, y)
T3 = sp.Function("T")(x, y, z)
w = sp.Function("w")(x)


def mlp(dim: int, seed: int, dtype: torch.dtype = torch.float64) -> torch.nn.Module:
    """A random tanh MLP dim -> 16 -> 16 -> 1 (biases on), seeded so every test run is identical."""
    gen = torch.Generator().manual_seed(seed)
    net = torch.nn.Sequential(
        torch.nn.Linear(dim, 16), torch.nn.Tanh(), torch.nn.Linear(16, 16), torch.nn.Tanh(), torch.nn.Linear(16, 1)
    ).to(dtype)
    with torch.no_grad():
        for p in net.parameters():
            p.copy_(torch.randn(p.shape, generator=gen, dtype=dtype) * 0.8)
    return net


def points(n: int, dim: int, seed: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    gen = torch.Generator().manual_seed(seed)
    return (torch.rand(n, dim, generator=gen, dtype=dtype) * 2 - 1).to(dtype)


def d(u: torch.Tensor, pts: torch.Tensor, *axes: int) -> torch.Tensor:
    """Hand-written nested autograd: ∂u/∂pts[:, axes[0]] ∂pts[:, axes[1]] ..., shape (N,)."""
    for i in axes:
        u = torch.autograd.grad(u.sum(), pts, create_graph=True)[0][:, i]
    return u


class Function(torch.nn.Module):
    """A known function written in torch: (N, d) -> (N,)."""

    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, pts: torch.Tensor) -> torch.Tensor:
        return self.fn(*pts.unbind(dim=1))


def _ei(x_t):
    return torch.exp(x_t) / (2 + torch.sin(x_t))


# (id, PDE factory, dim, reference(u, pts) -> (N, n_equations))
AGREEMENT = [
    ("laplace-2d", lambda: PDE(T2.diff(x, 2) + T2.diff(y, 2)), 2,
     lambda u, p: (d(u, p, 0, 0) + d(u, p, 1, 1))[:, None]),
    ("laplace-3d", lambda: PDE(T3.diff(x, 2) + T3.diff(y, 2) + T3.diff(z, 2)), 3,
     lambda u, p: (d(u, p, 0, 0) + d(u, p, 1, 1) + d(u, p, 2, 2))[:, None]),
    # Reference differentiates the product EI·w'' as a whole, independently of sympy's expansion.
    ("beam", lambda: PDE((sp.exp(x) / (2 + sp.sin(x)) * w.diff(x, 2)).diff(x, 2), rhs=1), 1,
     lambda u, p: (d(_ei(p[:, 0]) * d(u, p, 0, 0), p, 0, 0) - 1)[:, None]),
    ("euler-homogeneity", lambda: PDE(x * T2.diff(x) + y * T2.diff(y) - T2), 2,
     lambda u, p: (p[:, 0] * d(u, p, 0) + p[:, 1] * d(u, p, 1) - u)[:, None]),
    ("mixed-xyy", lambda: PDE(T2.diff(x, 1, y, 2)), 2, lambda u, p: d(u, p, 0, 1, 1)[:, None]),
    ("fourth-order", lambda: PDE(T2.diff(x, 4)), 2, lambda u, p: d(u, p, 0, 0, 0, 0)[:, None]),
    ("nonlinear", lambda: PDE(T2 * T2.diff(x) + T2.diff(y) ** 2, rhs=sp.pi * sp.sqrt(2)), 2,
     lambda u, p: (u * d(u, p, 0) + d(u, p, 1) ** 2 - math.pi * math.sqrt(2))[:, None]),
    ("system", lambda: PDE([T2.diff(x, 2) - T2.diff(y), sp.sin(T2) * T2.diff(x, y)], rhs=[0, x * y]), 2,
     lambda u, p: torch.stack([d(u, p, 0, 0) - d(u, p, 1), torch.sin(u) * d(u, p, 0, 1) - p[:, 0] * p[:, 1]], 1)),
    ("params", lambda: PDE(T2.diff(x, 2) + k * T2, rhs=sp.Rational(1, 3), params={"k": 2.5}), 2,
     lambda u, p: (d(u, p, 0, 0) + 2.5 * u - 1 / 3)[:, None]),
]


@pytest.mark.parametrize("name, make, dim, reference", AGREEMENT, ids=[a[0] for a in AGREEMENT])
def test_residual_matches_hand_written_autograd(name, make, dim, reference):
    torch.manual_seed(0)
    pde = make()
    model = mlp(dim, seed=len(name))
    pts = points(32, dim, seed=1)
    r = pde.compile()(model, pts)

    ref_pts = pts.clone().requires_grad_(True)
    expected = reference(model(ref_pts).squeeze(-1), ref_pts)
    assert r.shape == (32, pde.n_equations)
    assert r.dtype == torch.float64
    assert (r - expected).abs().max().item() <= 1e-10


SOLUTIONS = [
    ("harmonic-cubic", PDE(T2.diff(x, 2) + T2.diff(y, 2)), lambda a, b: a**3 - 3 * a * b**2, 1e-10),
    ("exp-sin", PDE(T2.diff(x, 2) + T2.diff(y, 2), rhs=0), lambda a, b: torch.exp(a) * torch.sin(b) + a * b, 1e-9),
    ("beam-sine", PDE(w.diff(x, 4) - w), lambda a: torch.sin(a), 1e-10),
    ("homogeneous", PDE(x * T2.diff(x) + y * T2.diff(y) - 2 * T2), lambda a, b: a * b, 1e-10),
    ("poisson", PDE(T2.diff(x, 2) + T2.diff(y, 2), rhs=-2 * sp.sin(x) * sp.sin(y)),
     lambda a, b: torch.sin(a) * torch.sin(b), 1e-10),
]


@pytest.mark.parametrize("name, pde, fn, tol", SOLUTIONS, ids=[s[0] for s in SOLUTIONS])
def test_residual_vanishes_on_exact_solutions(name, pde, fn, tol):
    pts = points(50, pde.dim, seed=2) * 2
    r = pde.compile()(Function(fn), pts)
    assert r.shape == (50, 1)
    assert r.abs().max().item() <= tol


def test_residual_is_differentiable_in_model_parameters():
    torch.manual_seed(0)
    model = mlp(2, seed=3)
    pts = points(32, 2, seed=4)
    r = PDE(T2.diff(x, 2) + T2.diff(y, 2) + T2 * T2.diff(x), rhs=sp.sin(x)).compile()(model, pts)
    loss = r.pow(2).mean()
    loss.backward()
    grads = [p.grad for p in model.parameters()]
    assert all(g is not None and torch.isfinite(g).all() for g in grads)
    assert sum(g.abs().sum().item() for g in grads) > 0
    assert not pts.requires_grad and pts.grad is None  # the caller's points are left alone


def test_points_that_require_grad_are_used_as_is():
    model = mlp(2, seed=5)
    pts = points(8, 2, seed=6).requires_grad_(True)
    r = PDE(T2.diff(x) - y).compile()(model, pts)
    (g,) = torch.autograd.grad(r.sum(), pts)
    assert torch.isfinite(g).all()


def test_float32_points_give_float32_residual():
    model = mlp(2, seed=7, dtype=torch.float32)
    pts = points(16, 2, seed=8, dtype=torch.float32)
    r = PDE([T2.diff(x, 2) + T2.diff(y, 2), T2.diff(x) * x], rhs=[sp.pi, 1]).compile()(model, pts)
    assert r.dtype == torch.float32 and r.device == pts.device and r.shape == (16, 2)


def test_derivatives_independent_of_points_are_zero():
    # A linear model has constant first derivatives, so second derivatives are not in the graph.
    lap = PDE(T2.diff(x, 2) + T2.diff(y, 2), rhs=1).compile()
    pts = points(10, 2, seed=9)
    linear = torch.nn.Linear(2, 1).double()
    assert torch.equal(lap(linear, pts), -torch.ones(10, 1, dtype=torch.float64))
    plain = Function(lambda a, b: a + 2 * b)  # no parameters: gradients do not require grad at all
    assert torch.equal(lap(plain, pts), -torch.ones(10, 1, dtype=torch.float64))


def test_derivatives_are_cached_within_one_call(monkeypatch):
    calls = []
    grad = torch.autograd.grad

    def counting_grad(*args, **kwargs):
        calls.append(1)
        return grad(*args, **kwargs)

    monkeypatch.setattr(torch.autograd, "grad", counting_grad)
    # h, h_x, h_y, h_xx, h_xy, h_yy, h_xxy need grads of h, h_x, h_y (or h_xy's parent) and h_xx: 4 passes.
    pde = PDE(T2.diff(x, 2) + T2.diff(y, 2) + T2.diff(x, y) + T2.diff(x, 2, y) + T2.diff(x) * T2.diff(y))
    pde.compile()(mlp(2, seed=10), points(4, 2, seed=11))
    assert len(calls) == 4


def test_piecewise_and_lattice_coefficients():
    coefficient = sp.Piecewise((1 + x**2, x > 0), (sp.Heaviside(y) + sp.Min(x, y, 0), True))
    model = mlp(2, seed=12)
    pts = points(20, 2, seed=13)
    r = PDE(coefficient * T2.diff(x)).compile()(model, pts)
    a, b = pts[:, 0], pts[:, 1]
    c = torch.where(a > 0, 1 + a**2, (b > 0).double() + torch.minimum(torch.minimum(a, b), torch.zeros_like(a)))
    ref_pts = pts.clone().requires_grad_(True)
    expected = c * d(model(ref_pts).squeeze(-1), ref_pts, 0)
    assert (r[:, 0] - expected).abs().max().item() <= 1e-12


def test_attributes_and_repr():
    pde = PDE([T2.diff(x, 1, y, 2), T2], rhs=[0, x], inputs=["x", "y"])
    assert pde.inputs == ("x", "y") and pde.unknown == "T"
    assert (pde.dim, pde.n_equations, pde.max_order) == (2, 2, 3)
    assert "T(x, y)" in repr(pde)
    assert PDE(w - 1).max_order == 0


def test_shape_errors_at_call_time():
    residual = PDE(T2.diff(x)).compile()
    with pytest.raises(ValueError, match=r"\(N, 2\)"):
        residual(mlp(2, seed=0), torch.zeros(4, 3, dtype=torch.float64))
    with pytest.raises(ValueError, match="model must return"):
        residual(lambda p: p, torch.zeros(4, 2, dtype=torch.float64))


U = sp.Function("U")(x, y)
g = sp.Function("g")(x)
T_real = sp.Function("T")(x**2, y)
ERRORS = [
    ("undeclared-symbol", lambda: PDE(T2.diff(x, 2) + k * T2), "k"),
    ("undeclared-in-rhs", lambda: PDE(T2.diff(x, 2), rhs=sp.Symbol("q") * x), "q"),
    ("no-unknown", lambda: PDE(x**2 + y), "no unknown"),
    ("two-unknowns", lambda: PDE(T2.diff(x) + U), "T, U"),
    ("unknown-in-two-forms", lambda: PDE(T2.diff(x) + sp.Function("T")(y, x)), "T(y, x)"),
    ("non-symbol-argument", lambda: PDE(T_real.diff(y)), "x**2"),
    ("repeated-argument", lambda: PDE(sp.Function("T")(x, x)), "argument x is repeated"),
    ("other-function", lambda: PDE(T2.diff(x, 2) + g), "g"),
    ("order-5", lambda: PDE(T2.diff(x, 5)), "order 5"),
    ("mixed-order-5", lambda: PDE(T2.diff(x, 3, y, 2) + T2), "order 5"),
    ("nested-order-5", lambda: PDE((x * T2.diff(x, 3)).diff(x, 2)), "order 5"),
    ("derivative-wrt-non-input", lambda: PDE(sp.Derivative(T2, z) + T2), "w.r.t. z"),
    ("length-mismatch", lambda: PDE([T2.diff(x), T2.diff(y)], rhs=[0, 1, 2]), "3 right-hand sides for 2"),
    ("inputs-mismatch", lambda: PDE(T2.diff(x), inputs=["y", "x"]), "'y', 'x'"),
    ("integral", lambda: PDE(sp.Integral(T2, (x, 0, 1)) + T2.diff(y)), "Integral"),
    ("subs", lambda: PDE(T2.diff(x).subs(x, 0) + T2), "differentiated at an argument other than the inputs"),
    ("derivative-of-non-unknown", lambda: PDE(sp.Derivative(sp.re(T2), x)), "re(T(x, y))"),
    ("relational", lambda: PDE(sp.Eq(T2.diff(x, 2), 0)), "Eq("),
    ("inequality", lambda: PDE(T2.diff(x) > 0), "T(x, y)"),
    ("param-is-input", lambda: PDE(T2.diff(x), params={"x": 1.0}), "params['x']"),
    ("string-rhs", lambda: PDE(T2.diff(x), rhs="sin(x)"), "sin(x)"),
    ("complex-constant", lambda: PDE(T2.diff(x) + sp.I * T2), "I"),
    ("unsupported-function", lambda: PDE(T2.diff(x) + sp.gamma(x)), "gamma"),
    ("equation-without-unknown", lambda: PDE([T2.diff(x), x + y]), "equation 1"),
]


@pytest.mark.parametrize("name, declare, fragment", ERRORS, ids=[e[0] for e in ERRORS])
def test_declaration_errors_name_the_offender(name, declare, fragment):
    with pytest.raises(PDEError) as info:
        declare()
    message = str(info.value)
    assert fragment in message
    assert "\n" not in message


def test_params_match_symbols_by_name():
    real_k = sp.Symbol("k", positive=True)  # assumptions differ from Symbol("k"); the name decides
    pde = PDE(T2.diff(x, 2) + real_k * T2, params={"k": 3})
    model, pts = mlp(2, seed=14), points(8, 2, seed=15)
    ref_pts = pts.clone().requires_grad_(True)
    u = model(ref_pts).squeeze(-1)
    expected = d(u, ref_pts, 0, 0) + 3 * u
    assert (pde.compile()(model, pts)[:, 0] - expected).abs().max().item() <= 1e-12


# -- inputs matched to the design variables by name ------------------------------------------------
def test_the_unknowns_arguments_are_matched_to_the_design_variables_by_name():
    """u(y, x) on a box (x, y): the residual of the true objective f = x² + 3y is zero, as it is for
    u(x, y); matched by position it would be u_xx read as f_yy, a residual of −2 everywhere."""
    from pinnbo import Box, Problem

    xs, ys = sp.symbols("x y")
    for unknown in (sp.Function("u")(ys, xs), sp.Function("u")(xs, ys)):
        pde = PDE(unknown.diff(xs, 2) + unknown.diff(ys), rhs=5)
        problem = Problem("p", Box((0, 0), (1, 1), ("x", "y")), lambda p: 0.0, pde=pde)
        assert problem.pde.inputs == ("x", "y")
        z = points(16, 2, seed=4)
        residual = problem.pde.compile()(lambda q: q[:, 0] ** 2 + 3 * q[:, 1], z)
        assert torch.allclose(residual, torch.zeros_like(residual), atol=1e-12)


@pytest.mark.parametrize("arguments", ["t", "x, y, z"])   # u(x) is fine: y is then a parameter (test_pde_parameters)
def test_a_pde_whose_inputs_are_not_the_design_variables_is_refused_before_any_evaluation(arguments, tmp_path):
    from typer.testing import CliRunner

    from pinnbo.cli import app

    (tmp_path / "plate.py").write_text(
        "import sympy as sp\nfrom pinnbo import PDE, Box, Problem\n\n"
        "def plate(log: str):\n"
        f"    args = sp.symbols('{arguments}', seq=True)\n"
        "    u = sp.Function('u')(*args)\n"
        "    def f(p):\n"
        "        open(log, 'a').write('call\\n')\n"
        "        return float(p[0])\n"
        "    return Problem('plate', Box((0, 0), (1, 1), ('x', 'y')), f, pde=PDE(u.diff(args[0], 2), rhs=0))\n")
    (tmp_path / "case.yaml").write_text(f"name: p\nproblem: plate.py:plate\nparams: {{log: {tmp_path / 'calls'}}}\n"
                                        f"budget: 12\noutput: {tmp_path / 'out'}\n")
    result = CliRunner().invoke(app, ["run", str(tmp_path / "case.yaml"), "--quiet"])
    assert result.exit_code == 2
    assert f"error: pde: the unknown u({arguments}) has inputs ({arguments}) but the design variables are (x, y)" \
        in result.stderr
    assert not (tmp_path / "calls").exists() and not (tmp_path / "out").exists()


@pytest.mark.parametrize("declare, needle", [
    (lambda: PDE(sp.Function("T")(2 * x, y).diff(x)), "lhs: the unknown is differentiated at an argument other"),
    (lambda: PDE(T2.diff(x).subs(x, 0) + T2), "lhs: the unknown is differentiated at an argument other"),
    (lambda: PDE(T2.diff(x, 2), rhs=torch.tensor([1.0, 2.0])), "rhs: a torch tensor; write coefficients"),
    (lambda: PDE(T2.diff(x, 2), rhs=torch.tensor(1.0)), "rhs: a torch tensor; write coefficients"),
    (lambda: PDE(sp.Function("T")(x).diff(y)), "lhs: is 0, with no unknown in it: sympy folds a derivative"),
    (lambda: PDE(T2.diff(x, 2), params={"k": 2.0}), "params['k']: the PDE has no symbol k; its symbols are x, y"),
])
def test_declaration_mistakes_have_their_own_message_without_sympy_internals(declare, needle):
    with pytest.raises(PDEError) as error:
        declare()
    message = str(error.value)
    assert message.startswith(needle), message
    assert "_xi" not in message and "Dummy" not in message and "\n" not in message


def test_the_negated_pde_is_the_pde_of_minus_the_unknown():
    """Optimisers minimise −f for a maximised f: the PDE they get is the one −f obeys. For the
    nonlinear u u_x + u_yy = 3 the residual of the negated PDE at v equals the original's at −v."""
    x, y = sp.symbols("x y")
    u = sp.Function("u")(x, y)
    pde = PDE(u * u.diff(x) + u.diff(y, 2), rhs=3)
    points = torch.rand(20, 2, dtype=torch.float64)
    v = lambda z: torch.sin(z[:, 0]) * z[:, 1] ** 3 + z[:, 0]  # noqa: E731
    torch.testing.assert_close(pde.negated().compile()(v, points), pde.compile()(lambda z: -v(z), points))


def test_a_maximised_problem_hands_its_optimiser_the_pde_of_the_minimised_values(tmp_path):
    """f = x² + y² obeys ∇²f = 4. Maximised, the optimiser minimises −f, whose Laplacian is −4: by
    the Python API and by the runner alike, its PDE's residual vanishes on −f and not on f."""
    from pinnbo import Box, Problem, make_optimizer
    from pinnbo.runner.build import build_optimizer, build_problem
    from pinnbo.runner.case import case_from_dict

    (tmp_path / "bowl.py").write_text(
        "import sympy as sp\nfrom pinnbo import PDE, Box, Problem\n\n"
        "def bowl():\n    x, y = sp.symbols('x y')\n    f = sp.Function('f')(x, y)\n"
        "    return Problem('bowl', Box((0, 0), (1, 1), ('x', 'y')), lambda p: float(p @ p), 'maximize',\n"
        "                   pde=PDE(f.diff(x, 2) + f.diff(y, 2), rhs=4))\n")
    x, y = sp.symbols("x y")
    f = sp.Function("f")(x, y)
    api = Problem("bowl", Box((0, 0), (1, 1), ("x", "y")), lambda p: float(p @ p), "maximize",
                  pde=PDE(f.diff(x, 2) + f.diff(y, 2), rhs=4))
    case = case_from_dict({"name": "b", "problem": f"{tmp_path / 'bowl.py'}:bowl", "method": "pinn-bo"},
                          source=str(tmp_path / "case.yaml"))
    points = torch.rand(10, 2, dtype=torch.float64)
    square = lambda z: (z ** 2).sum(1)  # noqa: E731
    for optimizer in (make_optimizer("pinn-bo", api), build_optimizer(case, build_problem(case))):
        residual = optimizer.pde.compile()
        torch.testing.assert_close(residual(lambda z: -square(z), points), torch.zeros(10, 1, dtype=torch.float64))
        assert residual(square, points).abs().min() > 7.9


def test_coefficients_stay_differentiable_in_the_points_when_asked():
    """x²·u'' = sin x, h = x³: the residual 6x³ − sin x; its derivative in the points, 18x² − cos x,
    needs the coefficient and the source in the graph (points that require grad), while the values
    are the same whether they do or not."""
    x = sp.Symbol("x")
    u = sp.Function("u")(x)
    residual = PDE(x**2 * u.diff(x, 2), rhs=sp.sin(x)).compile()
    points = torch.linspace(-1.0, 2.0, 7, dtype=torch.float64).reshape(-1, 1)
    plain = residual(lambda z: z[:, 0] ** 3, points)
    asked = points.clone().requires_grad_(True)
    traced = residual(lambda z: z[:, 0] ** 3, asked)
    assert torch.equal(plain, traced.detach())
    expected = 6 * points[:, 0] ** 3 - torch.sin(points[:, 0])
    assert torch.allclose(plain[:, 0], expected, atol=1e-12)
    (slope,) = torch.autograd.grad(traced.sum(), asked)
    assert torch.allclose(slope[:, 0], 18 * points[:, 0] ** 2 - torch.cos(points[:, 0]), atol=1e-10)


def test_precomputed_coefficients_give_the_same_residual_on_a_batch_of_the_points():
    """x²·u'' + eˣ u = sin x: the coefficients x², eˣ and the source evaluated once at all points and
    indexed by a batch give the residual of the batch computed from scratch (as training uses them)."""
    x = sp.Symbol("x")
    u = sp.Function("u")(x)
    pde = PDE(x**2 * u.diff(x, 2) + sp.exp(x) * u, rhs=sp.sin(x))
    pde.linear_form()     # its own coefficient nodes must not shift the residual's
    residual = pde.compile()
    everywhere = torch.linspace(-1.0, 2.0, 40, dtype=torch.float64).reshape(-1, 1)
    values = residual.coefficients(everywhere)
    assert all(v.shape == (40,) for v in values)
    batch = torch.tensor([3, 17, 0, 39, 22])
    cube = lambda z: z[:, 0] ** 3  # noqa: E731
    reused = residual(cube, everywhere[batch], tuple(v[batch] for v in values))
    p = everywhere[batch, 0]
    torch.testing.assert_close(reused[:, 0], 6 * p**3 + torch.exp(p) * p**3 - torch.sin(p), rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(reused, residual(cube, everywhere[batch]), rtol=0, atol=0)


def test_the_linear_form_reads_coefficients_and_source_and_keeps_its_latest_evaluation():
    """x²·u'' + eˣ u = sin x as (α, c_α) pairs and g; the same points again give the same
    evaluation (the collocation points of a run are fixed), other points a fresh one; a bare
    derivative with no source (u'' = 0) reads as coefficient 1 and source 0."""
    x = sp.Symbol("x")
    u = sp.Function("u")(x)
    form = PDE(x**2 * u.diff(x, 2) + sp.exp(x) * u, rhs=sp.sin(x)).linear_form()
    points = torch.linspace(-1.0, 2.0, 9, dtype=torch.float64).reshape(-1, 1)
    terms = dict(form.terms(points)[0])
    torch.testing.assert_close(terms[(2,)], points[:, 0] ** 2, rtol=1e-14, atol=0)
    torch.testing.assert_close(terms[(0,)], torch.exp(points[:, 0]), rtol=1e-14, atol=0)
    torch.testing.assert_close(form.source(points)[:, 0], torch.sin(points[:, 0]), rtol=1e-14, atol=0)
    assert form.terms(points.clone()) is form.terms(points) and form.source(points.clone()) is form.source(points)
    other = points + 0.5
    torch.testing.assert_close(dict(form.terms(other)[0])[(2,)], other[:, 0] ** 2, rtol=1e-14, atol=0)
    bare = PDE(u.diff(x, 2)).linear_form()
    assert [alpha for alpha, _ in bare.terms(points)[0]] == [(2,)]
    torch.testing.assert_close(dict(bare.terms(points)[0])[(2,)], torch.ones(9, dtype=torch.float64))
    assert torch.equal(bare.source(points), torch.zeros(9, 1, dtype=torch.float64))


class AxisModel(Function):
    """A known function that also offers its axis derivatives (the networks' Taylor mode) and counts
    how often the compiler asks for them."""

    def __init__(self, fn, derivatives):
        super().__init__(fn)
        self.derivatives, self.calls = derivatives, 0

    def axis_derivatives(self, pts, orders):
        self.calls += 1
        along = {i: torch.stack([self.derivatives(pts, i, k) for k in range(1, n + 1)]) for i, n in enumerate(orders) if n}
        return self(pts), along


def _cube_derivatives(pts, axis, k):
    """Pure derivatives of h = x³ y² + y: ∂ₓᵏ and ∂ᵧᵏ by hand."""
    a, b = pts[:, 0], pts[:, 1]
    if axis == 0:
        return [3 * a**2 * b**2, 6 * a * b**2, 6 * b**2][k - 1]
    return [2 * a**3 * b + 1, 2 * a**3, torch.zeros_like(a)][k - 1]


@pytest.mark.parametrize("pde, expected, uses_axes", [
    (PDE(T2.diff(x, 2) + T2.diff(y, 3) - T2), lambda a, b: 6 * a * b**2 - (a**3 * b**2 + b), True),
    (PDE(T2.diff(x, y)), lambda a, b: 6 * a**2 * b, False),          # mixed: autograd
    (PDE(T2.diff(x) + T2.diff(y)), lambda a, b: 3 * a**2 * b**2 + 2 * a**3 * b + 1, False),   # first order
])
def test_axis_derivatives_are_used_for_pure_derivatives_of_order_two_or_more(pde, expected, uses_axes):
    model = AxisModel(lambda a, b: a**3 * b**2 + b, _cube_derivatives)
    pts = points(20, 2, seed=4)
    r = pde.compile()(model, pts)
    assert model.calls == int(uses_axes)
    torch.testing.assert_close(r[:, 0], expected(pts[:, 0], pts[:, 1]), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("pde, expected", [
    (PDE(T2.diff(x, 2) + T2.diff(y, 2)), True),                          # Laplace: both extrema on the boundary
    (PDE(T2.diff(x, 2) + T2.diff(y, 2)).negated(), True),
    (PDE(T2.diff(x, 2) + T2.diff(y, 2), rhs=-1), True),                  # a supersolution: its minimum
    (PDE(T2.diff(x, 2) + T2.diff(y, 2), rhs=1), False),                  # a subsolution: its maximum only
    (PDE(-T2.diff(x, 2) - T2.diff(y, 2), rhs=1), True),                  # the same, written with the other sign
    (PDE(T2.diff(x, 2) + T2.diff(x, y) + T2.diff(y, 2) + x * T2.diff(x)), True),   # elliptic, with drift
    (PDE(T2.diff(x, 2) + T2.diff(y, 2) + 13 * T2), False),               # Helmholtz: a zero-order term
    (PDE(T2.diff(x, 2) - T2.diff(y, 2)), False),                         # hyperbolic
    (PDE(x * T2.diff(x, 2) + T2.diff(y, 2)), False),                     # a coefficient that may change sign
    (PDE(T2.diff(x, 2) + T2.diff(y, 2), rhs=x), False),                  # a source of either sign
    (PDE(T2.diff(x, 2) + T2.diff(y, 2) + sp.exp(T2)), False),            # nonlinear (Liouville)
    (PDE(w.diff(x, 4)), False),                                          # fourth order (the beam)
    (PDE(w.diff(x, 2)), True),                                           # one bare derivative: 1-D Laplace
    (PDE(x * T2.diff(y) - y * T2.diff(x)), False),                       # first order (DropWave's rotation)
    (PDE([T2.diff(x, 2) + T2.diff(y, 2), T2.diff(x)]), False),           # a system
])
def test_the_maximum_principle_is_read_off_the_operator(pde, expected):
    """For L h = Σ a_ij h_ij + Σ b_i h_i = g with (a_ij) definite and no zero-order term, the minimum
    is on the boundary when h is a supersolution; every other form is refused, never guessed."""
    assert pde.minimum_on_boundary() is expected


@pytest.mark.parametrize("pde, expected", [
    (PDE(T2.diff(x, 2) + T2.diff(y, 2), rhs=1), True),                   # a subsolution: its operator keeps it
    (PDE(T2.diff(x, 2) + T2.diff(y, 2), rhs=x), True),                   # a source of either sign: the same
    (PDE(T2.diff(x, 2) + T2.diff(y, 2) + 13 * T2, rhs=x), False),        # Helmholtz's operator does not
    (PDE(T2.diff(x, 2) - T2.diff(y, 2), rhs=1), False),                  # nor a hyperbolic one
])
def test_the_operator_alone_keeps_the_principle_whatever_its_source(pde, expected):
    """``with_source=False`` asks of L h = 0: where the source has the wrong sign for the PDE's own
    principle, the operator may still keep it."""
    assert pde.minimum_on_boundary(with_source=False) is expected
    assert pde.negated().minimum_on_boundary(with_source=False) is expected


@pytest.mark.parametrize("pde, expected", [
    (PDE(((1 + 3 * x) * T2.diff(x)).diff(x) + ((1 + 3 * x) * T2.diff(y)).diff(y)), (1 + 3 * x, ((1, 0), (0, 1)), (0, 0), 0.0)),
    (PDE(((1 + 3 * x) * T2.diff(x)).diff(x) + ((1 + 3 * x) * T2.diff(y)).diff(y)).negated(),
     (-1 - 3 * x, ((1, 0), (0, 1)), (0, 0), 0.0)),
    # a tensor graded by one factor, k (1 + xy)·[[2, 1], [1, 3]]: A = K/K_11
    (PDE(((1 + x * y) * (2 * T2.diff(x) + T2.diff(y))).diff(x) + ((1 + x * y) * (T2.diff(x) + 3 * T2.diff(y))).diff(y)),
     (2 + 2 * x * y, ((1, 0.5), (0.5, 1.5)), (0, 0), 0.0)),
    # a flow, b = (−2, 0), the same when the unknown is expanded first; a negated one's is −b
    (PDE(((1 + 3 * x) * T2.diff(x)).diff(x) + ((1 + 3 * x) * T2.diff(y)).diff(y) - 2 * T2.diff(x)),
     (1 + 3 * x, ((1, 0), (0, 1)), (-2, 0), 0.0)),
    (PDE((1 + 3 * x) * (T2.diff(x, 2) + T2.diff(y, 2)) + T2.diff(x)), (1 + 3 * x, ((1, 0), (0, 1)), (-2, 0), 0.0)),
    (PDE(((1 + 3 * x) * T2.diff(x)).diff(x) + ((1 + 3 * x) * T2.diff(y)).diff(y) - 2 * T2.diff(x)).negated(),
     (-1 - 3 * x, ((1, 0), (0, 1)), (2, 0), 0.0)),
    (PDE(((1 + 3 * x) * T2.diff(x)).diff(x) + ((1 + 3 * x) * T2.diff(y)).diff(y) - y * T2.diff(x)), None),   # a varying flow
    (PDE(T2.diff(x, 2) + T2.diff(y, 2) + x * T2.diff(x)), None),        # a drift that is no divergence
    (PDE(((1 + x) * T2.diff(x)).diff(x) + T2.diff(y, 2)), None),         # k along x only: no common factor
    # a reaction, constant: c = −1 (negated, +1)
    (PDE(((1 + x) * T2.diff(x)).diff(x) + ((1 + x) * T2.diff(y)).diff(y) - T2), (1 + x, ((1, 0), (0, 1)), (0, 0), -1.0)),
    (PDE(((1 + x) * T2.diff(x)).diff(x) + ((1 + x) * T2.diff(y)).diff(y) - T2).negated(),
     (-1 - x, ((1, 0), (0, 1)), (0, 0), 1.0)),
    (PDE(((1 + x) * T2.diff(x)).diff(x) + ((1 + x) * T2.diff(y)).diff(y) - x * T2), None),   # a reaction that varies
    (PDE(T2.diff(x, 2) + T2.diff(y, 2)), None),                         # constant: the constant operator's
])
def test_a_graded_conductor_is_read_in_divergence_form(pde, expected):
    """∇·(k A ∇h) + b·∇h + c h with k varying, A constant (A_11 = 1), the drift the divergence's plus
    a constant b and a constant c, is read as (k, A, b, c); anything else is not."""
    found = pde.divergence_form()
    if expected is None:
        assert found is None
    else:
        assert sp.simplify(found[0] - expected[0]) == 0 and found[1:] == expected[1:]


def _graded(k, v=0):
    return PDE((k * T2.diff(x)).diff(x) + (k * T2.diff(y)).diff(y) - v * T2.diff(x))


@pytest.mark.parametrize("pde, box, expected", [
    (_graded(1 + 3 * x), ((0, 2), (0, 1)), True),                       # a graded conductor, k in [1, 7]
    (_graded(1 + 3 * x).negated(), ((0, 2), (0, 1)), True),             # negative definite, the same
    (_graded(sp.exp(x) * (2 + sp.cos(y)), 3), ((0, 2), (0, 1)), True),  # with a flow; k ≥ 1 + cos 1
    (_graded(x - 1), ((0, 2), (0, 1)), False),                          # k changes sign inside
    (_graded(x - 1), ((2, 3), (0, 1)), True),                           # ... but not in this box
    (_graded(1 + x * y), ((-2, 2), (0, 1)), False),                     # k = −1 at (−2, 1)
    (_graded(1 + (x - y) ** 2 / 8), ((0, 7), (0, 7)), True),            # read expanded: x²/8 − xy/4 + y²/8 + 1
    (_graded(x**2 - x + 1), ((0, 1), (0, 1)), True),                    # k ≥ ¾; [0, 2] on the box, > 0 on halves
    (_graded((x - y) ** 2), ((0, 1), (0, 1)), False),                   # k = 0 on the diagonal
    (PDE(T2.diff(x, 2) + T2.diff(y, 2) + T2.diff(x) / x), ((0, 1), (0, 1)), False),     # a drift unbounded
    (PDE(T2.diff(x, 2) + T2.diff(y, 2) + T2.diff(x) / x), ((1, 2), (0, 1)), True),
    (PDE(T2.diff(x, 2) + T2.diff(y, 2), rhs=x), ((-2, -1), (0, 1)), True),   # the source's sign on the box
    (PDE(T2.diff(x, 2) + T2.diff(y, 2), rhs=x), ((-1, 1), (0, 1)), False),
    (PDE((1 + x**2) * T2.diff(x, 2) + 4 * x * T2.diff(x, y) + T2.diff(y, 2)), ((0, 2), (0, 1)), False),  # 1 − 3x²
    (PDE((1 + x**2) * T2.diff(x, 2) + x * T2.diff(x, y) + T2.diff(y, 2)), ((0, 2), (0, 1)), True),  # det 1 + ¾x²
    (PDE(x * T2.diff(x, 2) + T2.diff(y, 2) + 13 * T2), ((1, 2), (0, 1)), False),   # a zero-order term still
])
def test_the_maximum_principle_with_coefficients_that_vary_over_the_box(pde, box, expected):
    """With the box, a coefficient may vary: interval arithmetic bounds each leading minor of (a_ij),
    the drift and the source over it (Sylvester's criterion), and refuses what it cannot bound."""
    assert pde.minimum_on_boundary({"x": box[0], "y": box[1]}) is expected
    assert not pde.minimum_on_boundary()             # without the box, all of them are refused


@pytest.mark.parametrize("pde, expected", [
    (PDE(T2.diff(x, 2) + T2.diff(y, 2)), ((1.0, 0.0, 1.0), (0.0, 0.0), 0.0)),               # Laplace
    (PDE(T2.diff(x, 2) + T2.diff(y, 2)).negated(), ((-1.0, 0.0, -1.0), (0.0, 0.0), 0.0)),
    (PDE(-3 * T2.diff(x, 2) - 3 * T2.diff(y, 2), rhs=sp.sin(x)), ((-3.0, 0.0, -3.0), (0.0, 0.0), 0.0)),  # any source
    (PDE(T2.diff(x, 2) + 2 * T2.diff(y, 2)), ((1.0, 0.0, 2.0), (0.0, 0.0), 0.0)),           # anisotropic
    (PDE(sp.Rational(1, 4) * T2.diff(y, 2) + sp.pi * T2.diff(x, 2)), ((math.pi, 0.0, 0.25), (0.0, 0.0), 0.0)),
    (PDE(T2.diff(x, 2) + T2.diff(y, 2) - 3 * T2.diff(x)), ((1.0, 0.0, 1.0), (-3.0, 0.0), 0.0)),  # a flow
    (PDE(T2.diff(x, 2) + T2.diff(y, 2) + 13 * T2), ((1.0, 0.0, 1.0), (0.0, 0.0), 13.0)),    # Helmholtz
    (PDE(T2.diff(x, 2) + T2.diff(x, y) + T2.diff(y, 2)), ((1.0, 0.5, 1.0), (0.0, 0.0), 0.0)),  # a tensor
    (PDE(-2 * T2.diff(x, 2) + 3 * T2.diff(y, x) - 5 * T2.diff(y, 2) + T2), ((-2.0, 1.5, -5.0), (0.0, 0.0), 1.0)),
    (PDE(T2.diff(x, 2) - 2 * T2.diff(y, 2)), None),                      # hyperbolic
    (PDE(T2.diff(x, 2) + 2 * T2.diff(x, y) + T2.diff(y, 2)), None),      # parabolic: (∂x + ∂y)²
    (PDE(T2.diff(x, 2) + 3 * T2.diff(x, y) + T2.diff(y, 2)), None),      # hyperbolic through its mixed term
    (PDE(x * T2.diff(x, 2) + x * T2.diff(y, 2)), None),                  # a coefficient that varies
    (PDE(T2.diff(x, 2) + T2.diff(y, 2) + x * T2.diff(x)), None),         # a flow that varies
    (PDE(T2.diff(x, 2)), None),                                          # not every input
    (PDE(w.diff(x, 4)), None),                                           # fourth order (the beam)
    (PDE(T2.diff(x, 2) + T2.diff(y, 2) + sp.exp(T2)), None),             # nonlinear (Liouville)
    (PDE([T2.diff(x, 2) + T2.diff(y, 2), T2.diff(x)]), None),            # a system
])
def test_a_definite_constant_operator_is_read(pde, expected):
    """Σ A_ij ∂²h/∂z_i∂z_j + Σ b_i ∂h/∂z_i + c h = g with constants and (A_ij) definite, and nothing
    else (the corner functions of pde-gp): A as (A_xx, A_xy, A_yy), A_xy half the coefficient of the
    mixed derivative, in the order of the PDE's inputs."""
    found = pde.constant_operator()
    if expected is None:
        assert found is None
    else:
        (A_xx, A_xy), (A_yx, A_yy) = found[0]
        assert A_xy == A_yx and (A_xx, A_xy, A_yy) == pytest.approx(expected[0])
        assert found[1] == pytest.approx(expected[1]) and found[2] == pytest.approx(expected[2])


def test_a_constant_operator_of_one_input_is_read():
    assert PDE(-4 * w.diff(x, 2) + w.diff(x)).constant_operator() == (((-4.0,),), (1.0,), 0.0)


@pytest.mark.parametrize("pde, expected", [
    (PDE(T2.diff(x, 2) + T2.diff(y, 2) + 13 * T2), True),                       # Helmholtz: μ = 13
    (PDE(-T2.diff(x, 2) - T2.diff(y, 2) - 13 * T2, rhs=x), True),               # negated, a source: μ (sgn A)
    (PDE(T2.diff(x, 2) + T2.diff(y, 2)), False),                                 # Laplace: μ = 0
    (PDE(T2.diff(x, 2) + T2.diff(y, 2) - 2 * T2), False),                        # a loss: μ = −2
    (PDE(T2.diff(x, 2) + T2.diff(y, 2) - 2 * T2.diff(x) + 3 * T2), True),        # μ = 3 − 4/4 = 2
    (PDE(T2.diff(x, 2) + T2.diff(y, 2) - 4 * T2.diff(x) + 3 * T2), False),       # μ = 3 − 16/4 = −1: the flow wins
    (PDE(2 * T2.diff(x, 2) + T2.diff(x, y) + T2.diff(y, 2) - T2.diff(y) + T2 / 4), False),  # μ = 1/4 − 2/7
    (PDE(2 * T2.diff(x, 2) + T2.diff(x, y) + T2.diff(y, 2) - T2.diff(y) + 3 * T2 / 10), True),  # 3/10 − 2/7
    (PDE(x * T2.diff(x, 2) + T2.diff(y, 2) + 13 * T2), False),                   # a coefficient that varies
    (PDE(T2.diff(x, 2) + T2.diff(y, 2) + sp.exp(T2)), False),                    # nonlinear
])
def test_an_operator_oscillates_where_its_reduced_term_is_positive(pde, expected):
    """μ = (c − ¼ bᵀA⁻¹b) sgn A > 0, hand-derived for each: with the tensor A = ((2, ½), (½, 1)) and
    b = (0, −1), bᵀA⁻¹b = 2/(2 − ¼) = 8/7, so a reaction c oscillates from c > 2/7, where with A = I
    it would from c > ¼."""
    assert pde.oscillates() is expected


def test_the_linearisation_of_a_linear_pde_is_its_linear_form_and_of_a_nonlinear_one_its_derivative():
    """Gauss–Newton about h₀: for a linear PDE the coefficients and source whatever h₀; for
    T Tₓ + T_yy = 3 about h₀ the hand-derived c_T = ∂ₓh₀, c_x = h₀, c_yy = 1 and g = 3 + h₀ ∂ₓh₀."""
    points = torch.rand(7, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    linear = PDE(T2.diff(x, 2) + x * T2.diff(y) - 2 * T2, rhs=sp.sin(x * y))
    assert linear.is_linear()
    form, linearised = linear.linear_form(), linear.linearised_form()
    assert linearised.multi_indices == ()
    evaluated = linearised.at(points, {})
    assert [(a, c.tolist()) for a, c in evaluated.terms(points)[0]] == [(a, c.tolist()) for a, c in form.terms(points)[0]]
    assert torch.equal(evaluated.source(points), form.source(points))

    burgers = PDE(T2 * T2.diff(x) + T2.diff(y, 2), rhs=3)
    assert not burgers.is_linear()
    nonlinear = burgers.linearised_form()
    assert set(nonlinear.multi_indices) == {(0, 0), (1, 0)}
    h0, hx = torch.cos(points[:, 0]), -torch.sin(points[:, 0])
    evaluated = nonlinear.at(points, {(0, 0): h0, (1, 0): hx})
    terms = dict(evaluated.terms(points)[0])
    assert set(terms) == {(0, 0), (1, 0), (0, 2)}
    assert torch.allclose(terms[(0, 0)], hx) and torch.allclose(terms[(1, 0)], h0)
    assert torch.allclose(terms[(0, 2)], torch.ones(7, dtype=torch.float64))
    assert torch.allclose(evaluated.source(points)[:, 0], 3 + h0 * hx)
    with pytest.raises(ValueError, match="evaluated at"):
        evaluated.terms(points[:3])


def test_an_absolute_value_of_a_derivative_linearises_to_its_sign():
    """|Tₓ| + T_yy = 1 (an eikonal-like term): the unknown is real, so ∂|Tₓ|/∂Tₓ = sign(Tₓ), and
    about h₀ the hand-derived c_x = sign(∂ₓh₀), c_yy = 1 and g = 1 + sign(∂ₓh₀) ∂ₓh₀ − |∂ₓh₀| = 1."""
    points = torch.rand(6, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(2))
    form = PDE(sp.Abs(T2.diff(x)) + T2.diff(y, 2), rhs=1).linearised_form()
    assert form.multi_indices == ((1, 0),)
    hx = torch.tensor([1.5, -0.3, 0.2, -2.0, 0.7, -0.1], dtype=torch.float64)
    evaluated = form.at(points, {(1, 0): hx})
    terms = dict(evaluated.terms(points)[0])
    assert torch.equal(terms[(1, 0)], torch.sign(hx)) and torch.equal(terms[(0, 2)], torch.ones(6, dtype=torch.float64))
    assert torch.allclose(evaluated.source(points)[:, 0], torch.ones(6, dtype=torch.float64))


def test_the_order_of_the_terms_does_not_depend_on_the_process():
    """A set of sympy atoms iterates in the order of string hashes, which Python salts per process;
    the linear form's terms (the order of the PDE-GP kernel's sums, so its rounding) must not."""
    code = ("import sympy as sp, torch; from pinnbo.pde import PDE; x, y, z = sp.symbols('x y z'); "
            "T = sp.Function('T')(x, y, z); "
            "form = PDE(T.diff(x, 2) + T.diff(y, 2) + T.diff(z, 2) + x * T.diff(y) + T.diff(x) - 3 * T).linear_form(); "
            "print([a for a, _ in form.terms(torch.rand(2, 3, dtype=torch.float64))[0]])")
    orders = {subprocess.run([sys.executable, "-c", code], env={**os.environ, "PYTHONHASHSEED": str(h)},
                             capture_output=True, text=True, check=True).stdout for h in range(4)}
    assert len(orders) == 1, orders
