"""The log-posterior V(x) = −½‖D − G(x)‖²_Γ − ½‖x − m0‖²_P against a hand computation, and the
problem's one-line refusals."""

from __future__ import annotations

import numpy as np
import pytest

from pinnbo.calibration import calibration_problem
from pinnbo.calibration.posterior import normalised_density, per_variable
from pinnbo.problem import Box, ProblemError


def linear(x):
    return np.array([2.0 * x[0] + x[1], x[0] - x[1], 3.0])


def test_log_posterior_is_the_gaussian_misfit_plus_the_prior():
    problem = calibration_problem("lin", linear, data=[1.0, 0.5, 2.0], noise_variance=[0.25, 1.0, 4.0],
                                  prior_mean=[0.5, 0.0], prior_sd=[1.0, 2.0], domain=Box((-3, -3), (3, 3)))
    x = np.array([0.3, -0.7])
    G = linear(x)
    expected = -0.5 * ((1.0 - G[0]) ** 2 / 0.25 + (0.5 - G[1]) ** 2 / 1.0 + (2.0 - G[2]) ** 2 / 4.0) \
        - 0.5 * ((0.3 - 0.5) ** 2 / 1.0 + (-0.7) ** 2 / 4.0)
    assert problem.sense == "maximize"
    assert problem.objective(x) == pytest.approx(expected, rel=1e-14)


@pytest.mark.parametrize("kwargs, field", [
    ({"data": [1.0, "a"]}, "params.data"),
    ({"noise_variance": [1.0, 2.0]}, "params.noise_variance"),      # 2 variances for 3 outputs
    ({"noise_variance": 0.0}, "params.noise_variance"),
    ({"prior_mean": [0.0]}, "params.prior_mean"),
    ({"prior_mean": [5.0, 0.0]}, "params.prior_mean"),             # outside the box
    ({"prior_sd": [1.0, -1.0]}, "params.prior_sd"),
])
def test_bad_declarations_name_their_field(kwargs, field):
    args = dict(data=[1.0, 0.5, 2.0], noise_variance=1.0, prior_mean=[0.0, 0.0], prior_sd=[1.0, 1.0])
    args.update(kwargs)
    with pytest.raises(ProblemError, match=f"^{field}:"):
        calibration_problem("lin", linear, domain=Box((-3, -3), (3, 3)), **args)


def test_a_forward_model_with_the_wrong_number_of_outputs_is_a_failed_evaluation():
    problem = calibration_problem("lin", linear, data=[1.0, 2.0], noise_variance=1.0, prior_mean=[0, 0],
                                  prior_sd=[1, 1], domain=Box((-3, -3), (3, 3)))
    with pytest.raises(ValueError, match="3 outputs, expected 2"):
        problem.objective(np.zeros(2))


def test_per_variable_values_by_name_or_in_order():
    assert per_variable({"b": 2, "a": 1}, ("a", "b"), "params.prior_mean") == [1.0, 2.0]
    assert per_variable([1, 2], ("a", "b"), "params.prior_mean") == [1.0, 2.0]
    with pytest.raises(ProblemError, match="params.prior_sd: .*missing b"):
        per_variable({"a": 1}, ("a", "b"), "params.prior_sd")


def test_normalised_density_of_a_gaussian_log_density():
    grid = np.linspace(-8, 8, 4001)
    p = normalised_density(-0.5 * (grid - 1.0) ** 2 / 0.49 + 123.0, grid)     # the constant must not matter
    assert p.max() == pytest.approx(1 / np.sqrt(2 * np.pi * 0.49), rel=1e-6)
