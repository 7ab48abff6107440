"""Ackley and Levy with the SFU bounds (problems/sfu.py), and their GP-UCB+ cases (Kim & Sanz-Alonso)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from pinnbo.problem import PROBLEM_FACTORIES, ProblemError
from pinnbo.runner.build import build_problem
from pinnbo.runner.case import load_case
from problems.sfu import ackley, ackley_values, levy, levy_values

CASES = Path(__file__).resolve().parents[2] / "cases"


def test_registered_with_sfu_bounds():
    assert PROBLEM_FACTORIES["ackley"] is ackley and PROBLEM_FACTORIES["levy"] is levy
    a, b = ackley(), levy()
    assert a.domain.dim == b.domain.dim == 10
    np.testing.assert_array_equal(a.domain.lower, (-32.768,) * 10)
    np.testing.assert_array_equal(a.domain.upper, (32.768,) * 10)
    np.testing.assert_array_equal(b.domain.lower, (-10.0,) * 10)
    np.testing.assert_array_equal(b.domain.upper, (10.0,) * 10)
    for p in (a, b):
        assert p.sense == "minimize" and p.pde is None and p.constraints == () and p.optimum == 0.0


@pytest.mark.parametrize("dim", [1, 2, 10, 25])
def test_value_at_the_optimum_is_zero(dim):
    for factory in (ackley, levy):
        problem = factory(dim)
        assert problem.domain.dim == dim
        value = problem.objective(np.asarray(problem.optimum_location))
        assert isinstance(value, float) and value == pytest.approx(0.0, abs=1e-14)
    np.testing.assert_array_equal(levy(dim).optimum_location, np.ones(dim))
    np.testing.assert_array_equal(ackley(dim).optimum_location, np.zeros(dim))


def test_ackley_hand_computed():
    # x = (1, 1): mean x^2 = 1, cos 2 pi = 1: f = -20 e^-0.2 - e + 20 + e = 20 (1 - e^-0.2)
    assert ackley(2).objective(np.array([1.0, 1.0])) == pytest.approx(20 * (1 - math.exp(-0.2)), rel=1e-14)
    # x = (0.5, 0, 0): mean x^2 = 1/12, mean cos = (cos pi + 2)/3 = 1/3
    expected = -20 * math.exp(-0.2 * math.sqrt(1 / 12)) - math.exp(1 / 3) + 20 + math.e
    assert ackley(3).objective(np.array([0.5, 0.0, 0.0])) == pytest.approx(expected, rel=1e-14)
    assert expected == pytest.approx(2.44467, abs=1e-5)


def test_levy_hand_computed():
    # x = (0, 0): w = 3/4; sin^2(3 pi/4) = 1/2; (w - 1)^2 = 1/16; sin^2(3 pi/2) = 1
    expected = 0.5 + (1 / 16) * (1 + 10 * math.sin(0.75 * math.pi + 1) ** 2) + (1 / 16) * (1 + 1)
    assert levy(2).objective(np.zeros(2)) == pytest.approx(expected, rel=1e-14)
    assert expected == pytest.approx(0.71584, abs=1e-5)
    # d = 1: no middle sum; x = 5 -> w = 2: sin^2(2 pi) = 0, (w - 1)^2 (1 + sin^2(4 pi)) = 1
    assert levy(1).objective(np.array([5.0])) == pytest.approx(1.0, abs=1e-14)


def test_vectorised_matches_the_oracle():
    rng = np.random.default_rng(3)
    for factory, fn in ((ackley, ackley_values), (levy, levy_values)):
        problem = factory(7)
        X = problem.domain.from_unit(rng.uniform(size=(20, 7)))
        np.testing.assert_allclose([problem.objective(x) for x in X], fn(X), rtol=1e-15)
        assert (fn(X) > 0).all()


@pytest.mark.parametrize("dim", [0, -3, 2.5, True, "10", None])
def test_dimension_is_validated(dim):
    for factory in (ackley, levy):
        with pytest.raises(ProblemError, match=r"params\.dim") as info:
            factory(dim)
        assert "\n" not in str(info.value)


def test_oracle_checks_the_design_size():
    with pytest.raises(ProblemError, match="ackley"):
        ackley(3).objective(np.zeros(4))


@pytest.mark.parametrize("name, problem", [("ackley10", "ackley"), ("levy10", "levy")])
def test_cases(name, problem):
    case = load_case(CASES / f"{name}.yaml")
    assert case.problem == problem and case.method == "gp-ucb+"
    assert case.budget == 100 and case.initial_points == 10 and case.seed == 0
    built = build_problem(case)
    assert built.domain.dim == 10 and built.optimum == 0.0
    text = (CASES / f"{name}.yaml").read_text()
    assert "--methods gp-ucb+,exploit+,gp-ucb,exploit" in text
