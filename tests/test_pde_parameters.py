"""Physics in some inputs: a PDE in (x, y) over a design that also has parameters holds in x, y for
each value of them. Its residual, the PDE-GP conditioned on it (a product of the PDE-conditioned
kernel in x, y and a kernel on the parameter), and the kinds of variables it allows."""

from __future__ import annotations

import sys

import pytest
import sympy as sp
import torch
import yaml
from typer.testing import CliRunner

from pinnbo import Box, Problem, Variable
from pinnbo.cli import app
from pinnbo.errors import MethodError, ProblemError
from pinnbo.models.pde_gp import PDEGP
from pinnbo.optimizers import make_optimizer
from pinnbo.pde import PDE
from pinnbo.streams import sobol_unit
from tests.survival import records

x, y = sp.symbols("x y")
T = sp.Function("T")(x, y)
LOWER = torch.tensor([0.0, 0.0, 0.5], dtype=torch.float64)      # columns x, y, p
WIDTHS = torch.tensor([2.0, 3.0, 1.5], dtype=torch.float64)


def test_a_parameter_joins_the_unknowns_arguments_and_is_never_differentiated():
    pde = PDE(T.diff(x, 2) + T.diff(y, 2), rhs=0).for_variables(("x", "p", "y"))
    assert pde.inputs == ("x", "p", "y") and pde.own_inputs == ("x", "y")
    residual = pde.compile()
    points = torch.rand(20, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    harmonic_for_each_p = lambda z: (z[:, 1] * (z[:, 0] ** 2 - z[:, 2] ** 2) + z[:, 1] ** 3).unsqueeze(-1)  # noqa: E731
    not_harmonic = lambda z: (z[:, 1] * z[:, 0] ** 2).unsqueeze(-1)  # noqa: E731   ∇²_xy = 2p
    torch.testing.assert_close(residual(harmonic_for_each_p, points), torch.zeros(20, 1, dtype=torch.float64))
    torch.testing.assert_close(residual(not_harmonic, points), 2 * points[:, 1:2])
    assert pde.negated().own_inputs == ("x", "y")


def test_the_pde_gp_mean_satisfies_the_pde_in_x_y_at_each_parameter_value():
    """∇²_xy f = 4 at 256 points of (x, y, p) and no observation: the mean's Laplacian in x, y, by
    autograd at fresh points with p at three values, is 4 (the parameter's lengthscale is free)."""
    source = PDE(T.diff(x, 2) + T.diff(y, 2), rhs=4).for_variables(("x", "y", "p")).linear_form()
    Z = torch.as_tensor(sobol_unit(256, 3, 1, "pde-parameters"))
    model = PDEGP(torch.zeros(0, 3, dtype=torch.float64), torch.zeros(0, dtype=torch.float64), Z, source, LOWER,
                  WIDTHS, start={"lengthscale": 0.5 * WIDTHS, "outputscale": 10.0, "pde_noise": 1e-6})
    for p in (0.2, 0.5, 0.8):   # unit coordinates of the parameter
        unit = 0.15 + 0.7 * torch.rand(30, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(3))
        unit[:, 2] = p
        physical = (LOWER + unit * WIDTHS).requires_grad_(True)
        mean, _ = model.mean_and_variance((physical - LOWER) / WIDTHS)
        (grad,) = torch.autograd.grad(mean.sum(), physical, create_graph=True)
        laplacian = sum(torch.autograd.grad(grad[:, i].sum(), physical, retain_graph=True)[0][:, i] for i in range(2))
        torch.testing.assert_close(laplacian, torch.full((30,), 4.0, dtype=torch.float64), rtol=0, atol=0.05)


def test_the_pde_in_x_y_makes_a_parameterised_harmonic_function_from_few_values():
    """f = p e^x sin y + p² (harmonic in x, y for every p) from 24 values: the PDE-GP's mean is within
    3 % of the function's spread (RMS); the same GP without the PDE is off by more than twice as much."""
    def f(unit: torch.Tensor) -> torch.Tensor:
        z = LOWER + unit * WIDTHS
        return z[:, 2] * torch.exp(z[:, 0]) * torch.sin(z[:, 1]) + z[:, 2] ** 2

    laplace = PDE(T.diff(x, 2) + T.diff(y, 2), rhs=0).for_variables(("x", "y", "p")).linear_form()
    X = torch.as_tensor(sobol_unit(24, 3, 0, "pde-parameters-data"))
    Z = torch.as_tensor(sobol_unit(384, 3, 1, "pde-parameters"))
    test = torch.rand(500, 3, dtype=torch.float64, generator=torch.Generator().manual_seed(0))
    errors = []
    for form, points in ((laplace, Z), (None, None)):
        model = PDEGP(X, f(X), points, form, LOWER, WIDTHS)
        with torch.no_grad():
            mean, _ = model.mean_and_variance(test)
        errors.append(float((mean - f(test)).pow(2).mean().sqrt() / f(test).std()))
    assert errors[0] < 0.03 and 2 * errors[0] < errors[1]


def test_a_choice_may_be_a_parameter_but_not_a_variable_of_the_pde():
    pde = PDE(T.diff(x, 2) + T.diff(y, 2), rhs=0)
    box = Box.of([Variable("x"), Variable("y"), Variable("material", "choice", choices=("a", "b"))])
    problem = Problem("plate", box, lambda d: 0.0, pde=pde)
    assert problem.pde.inputs == ("x", "y", "material") and problem.pde.own_inputs == ("x", "y")
    with pytest.raises(MethodError, match="'pde-gp' takes real, log and integer variables and material is a choice"):
        make_optimizer("pde-gp", box, pde=problem.pde)
    make_optimizer("gp-ei", box)    # the GP methods take it, without the physics
    inside = Box.of([Variable("x", "integer", 0, 3), Variable("y")])
    with pytest.raises(ProblemError, match="pde: the PDE's variables are real; x is an integer"):
        Problem("plate", inside, lambda d: 0.0, pde=pde)


def test_a_case_names_the_pdes_own_variables_and_pde_gp_runs_it(tmp_path):
    (tmp_path / "plate.py").write_text("import math, sys\nx, y, p = map(float, sys.argv[1:])\n"
                                       "print(p * math.exp(x) * math.sin(y) - (p - 1.2) ** 2)\n")
    case = {"name": "plate", "problem": "external", "output": str(tmp_path / "out"), "method": "pde-gp",
            "params": {"variables": {"x": [0, 1], "y": [0, 3], "p": [0.5, 2]}, "sense": "maximize",
                       "pde": "diff(u, x, 2) + diff(u, y, 2) = 0", "pde_variables": ["x", "y"]},
            "oracle": {"command": f"{sys.executable} plate.py {{x}} {{y}} {{p}}"}, "budget": 8, "initial_points": 5}
    (tmp_path / "case.yaml").write_text(yaml.safe_dump(case))
    result = CliRunner().invoke(app, ["run", str(tmp_path / "case.yaml"), "--quiet", "--smoke"])
    assert result.exit_code == 0, result.output
    logged = records(tmp_path / "out")
    assert len(logged) == 6 and all(r["status"] == "ok" for r in logged)
