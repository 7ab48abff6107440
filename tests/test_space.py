"""The design space (pinnbo.space): each kind's encoding against its definition, the initial
design's coverage of discrete levels, and the plain box unchanged."""

from __future__ import annotations

import math

import numpy as np
import pytest

from pinnbo.errors import ProblemError
from pinnbo.space import Box, Variable
from pinnbo.streams import initial_design

MIXED = Box.of([Variable("x", "real", 0.0, 2.0), Variable("rate", "log", 1e-4, 1e-1),
                Variable("fins", "integer", 2, 12), Variable("material", "choice", choices=("copper", "aluminium", "steel"))])


def test_encoded_bounds_follow_each_kind():
    assert MIXED.lower == (0.0, math.log(1e-4), 1.5, -0.5)
    assert MIXED.upper == (2.0, math.log(1e-1), 12.5, 2.5)
    assert not MIXED.plain and not MIXED.numeric
    assert MIXED.dims("integer", "choice") == (2, 3)


def test_values_and_encode_are_inverse_and_typed():
    design = [0.25, 0.003, 7, "steel"]
    x = MIXED.encode(design)
    np.testing.assert_allclose(x, [0.25, math.log(0.003), 7.0, 2.0])
    values = MIXED.values(x)
    assert values[0] == 0.25 and math.isclose(values[1], 0.003, rel_tol=1e-15)
    assert values[2] == 7 and type(values[2]) is int and values[3] == "steel"
    assert MIXED.design(x) == {"x": 0.25, "rate": values[1], "fins": 7, "material": "steel"}


@pytest.mark.parametrize("value, message", [
    ([0.1, 0.01, 7.5, "steel"], "fins: expected an integer, got 7.5"),
    ([0.1, 0.01, 7, "brass"], "material: expected one of copper, aluminium, steel, got 'brass'"),
    ([0.1, -1.0, 7, "steel"], "rate: expected a number > 0"),
    ([0.1, 0.01, True, "steel"], "fins: expected an integer in [2, 12], got True"),
    ([0.1, 0.01, 7], "3 values, the problem has 4 variables"),
])
def test_encode_names_the_variable_it_refuses(value, message):
    with pytest.raises(ValueError, match=message.replace("[", r"\[").replace("]", r"\]")):
        MIXED.encode(value)


def test_snap_rounds_discrete_coordinates_and_clips():
    x = MIXED.snap(np.array([2.5, 0.0, 7.49, 1.6]))
    assert list(x) == [2.0, math.log(1e-1), 7.0, 2.0]


def test_from_unit_gives_every_level_an_equal_share():
    # u on a fine regular grid: each of the 11 integers and 3 choices must own the same number of points.
    n = 11 * 3 * 40
    u = (np.arange(n) + 0.5) / n
    X = MIXED.from_unit(np.stack([u, u, u, u], axis=1))
    counts = np.unique(X[:, 2], return_counts=True)[1]
    assert len(counts) == 11 and counts.min() == counts.max()
    counts = np.unique(X[:, 3], return_counts=True)[1]
    assert len(counts) == 3 and counts.min() == counts.max()
    # log scale: the lower half of [0, 1] maps below the geometric mean of the bounds
    np.testing.assert_allclose(np.exp(X[n // 2 - 1, 1]), math.sqrt(1e-4 * 1e-1), rtol=1e-2)


@pytest.mark.parametrize("n", [2, 3, 7, 10, 31])
def test_initial_design_covers_the_choices_evenly(n):
    X = initial_design(MIXED, n, seed=5)
    counts = np.bincount(X[:, 3].astype(int), minlength=3)
    assert counts.max() - counts.min() <= 1 and counts.sum() == n
    fins = X[:, 2].astype(int)
    if n <= 11:   # fewer points than integers: all different
        assert len(set(fins)) == n
    else:
        counts = np.bincount(fins - 2, minlength=11)
        assert counts.max() - counts.min() <= 1
    assert initial_design(MIXED, n, seed=5).tolist() == X.tolist()   # one seed, one design


def test_initial_design_draws_each_integer_without_bias():
    # Over many seeds with fewer points than levels, each integer is drawn equally often (within 5 sigma).
    box = Box.of([Variable("n", "integer", 0, 9)])
    draws = np.concatenate([initial_design(box, 3, seed) for seed in range(400)]).astype(int).ravel()
    counts = np.bincount(draws, minlength=10)
    expected = len(draws) / 10
    assert np.all(np.abs(counts - expected) < 5 * math.sqrt(expected))


def test_a_box_of_real_variables_is_the_plain_box():
    box = Box((0.0, -1.0), (1.0, 1.0), ("a", "b"))
    assert box.plain and box.numeric
    x = np.array([0.123456789012345, -0.5])
    assert box.values(x) == [0.123456789012345, -0.5]
    np.testing.assert_array_equal(box.encode(box.values(x)), x)
    assert box.from_unit(np.array([0.3, 0.3])).tolist() == [0.3, -1.0 + 0.3 * 2.0]
    assert box.design(x) is not None and np.array_equal(box.design(x), x)


@pytest.mark.parametrize("variable, message", [
    (dict(name="m", kind="choice", choices=("a",)), "variables.m: expected a list of at least two names"),
    (dict(name="m", kind="choice", choices=("a", "a")), "variables.m: the choices must be different"),
    (dict(name="r", kind="log", lower=0.0, upper=1.0), "variables.r: a log scale needs bounds > 0"),
    (dict(name="n", kind="integer", lower=0.5, upper=3), "variables.n: expected integer bounds"),
    (dict(name="n", kind="integer", lower=3, upper=3), "variables.n: lower bound 3 must be below upper bound 3"),
    (dict(name="k", kind="ordinal"), "variables.k: kind 'ordinal'; expected one of real, log, integer, choice"),
])
def test_bad_variables_are_one_line_problem_errors(variable, message):
    with pytest.raises(ProblemError, match=message):
        Variable(**variable)
