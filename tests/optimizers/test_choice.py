"""method: auto: each branch of the rule on a small problem, the choice recorded by the optimiser,
and auto refusing settings it would have to guess the owner of."""

from __future__ import annotations

import numpy as np
import pytest
import sympy as sp

from pinnbo.optimizers import AUTO, MethodError, choose_method, make_optimizer
from pinnbo.optimizers.choice import _evolution, choice_for
from pinnbo.pde import PDE
from pinnbo.problem import Box, Constraint, Problem
from pinnbo.space import Variable

x, y = sp.symbols("x y")
T = sp.Function("T")(x, y)
LAPLACE = PDE(T.diff(x, 2) + T.diff(y, 2), rhs=0)
ANISOTROPIC = PDE(T.diff(x, 2) + 2 * T.diff(y, 2), rhs=0)    # a maximum principle; the stretched angle solves it
DRIFT = PDE(T.diff(x, 2) + T.diff(y, 2) - 3 * T.diff(x), rhs=0)  # a maximum principle; a corner function solves it
TENSOR = PDE(T.diff(x, 2) + T.diff(x, y) + T.diff(y, 2), rhs=0)  # a maximum principle; a sheared angle solves it
SWIRL = PDE(T.diff(x, 2) + T.diff(y, 2) + x * T.diff(x), rhs=0)   # a maximum principle; frozen corner functions
GRADED = PDE(((1 + 3 * x) * T.diff(x)).diff(x) + ((1 + 3 * x) * T.diff(y)).diff(y), rhs=0)   # the same
HELMHOLTZ = PDE(T.diff(x, 2) + T.diff(y, 2) + 13 * T, rhs=0)
LIOUVILLE = PDE(T.diff(x, 2) + T.diff(y, 2) + sp.exp(T), rhs=0)
SIGN = PDE(sp.sign(T.diff(x)) + T.diff(y, 2), rhs=1)
BOX = Box((0.0, 0.0), (1.0, 1.0), ("x", "y"))


def mixed_box(kind: str) -> Box:
    extra = Variable("k", "choice", choices=("a", "b")) if kind == "choice" else Variable("k", "integer", 1, 4)
    return Box.of([Variable("x"), Variable("y"), extra])


@pytest.mark.parametrize("pde, continuous, method", [
    (LAPLACE, None, "pde-gp"),          # a linear PDE, boundary data not declared
    (LAPLACE, True, "pde-gp"),          # the maximum principle, continuous data
    (LAPLACE, False, "pde-gp"),         # the maximum principle, data that jump, the corners' angles solve it
    (ANISOTROPIC, False, "pde-gp"),     # the same, the angles in the coordinates where it is the Laplacian
    (DRIFT, False, "pde-gp"),           # the same, the angles tilted downstream
    (TENSOR, False, "pde-gp"),          # the same, the angles sheared: a conductivity tensor
    (SWIRL, False, "pde-gp"),           # the same, each corner's function the operator's frozen there
    (SWIRL, True, "pde-gp"),
    (GRADED, False, "pde-gp"),          # a graded conductor: the same
    (HELMHOLTZ, False, "pde-gp"),       # no maximum principle; the corners' functions θ J₀(kρ) carry the jump
    (LIOUVILLE, None, "pde-gp"),        # nonlinear, linearised
    (SIGN, None, "pinn-bo"),            # nothing to linearise by
    (None, None, "gp-ei"),              # no PDE
])
def test_the_pde_branches(pde, continuous, method):
    choice = choose_method(BOX, pde, boundary_continuous=continuous)
    assert choice.method == method
    assert choice.reason and "\n" not in choice.reason


def test_a_helmholtz_operator_whose_data_jump_says_it_carries_the_corners_functions():
    """Rule 12, the model with the corners' functions of a gain (θ J₀(kρ)): its reason says so, and
    with continuous data or none declared it does not."""
    jumps = choose_method(BOX, HELMHOLTZ, boundary_continuous=False)
    assert jumps.method == "pde-gp" and "corners' functions for the boundary data's jumps" in jumps.reason
    for continuous in (True, None):
        assert "corners" not in choose_method(BOX, HELMHOLTZ, boundary_continuous=continuous).reason


def test_the_pde_gp_up_to_three_variables_the_plain_gp_in_four_to_six_the_network_beyond():
    """Without boundary conditions; with them, the pde-gp in 4 variables too
    (test_boundary_conditions_choose_the_pde_gp_that_conditions_on_them)."""
    for d, method in ((3, "pde-gp"), (4, "gp-ei"), (5, "gp-ei"), (6, "gp-ei"), (7, "pinn-bo")):
        names = sp.symbols(f"x1:{d + 1}")
        u = sp.Function("u")(*names)
        helmholtz = PDE(sum(u.diff(v, 2) for v in names) + 20 * u, rhs=0)
        choice = choose_method(Box((0.0,) * d, (1.0,) * d, tuple(map(str, names))), helmholtz)
        assert choice.method == method
        assert (f"in {d} variables" in choice.reason) is (d > 3)


def test_a_source_that_shapes_the_inside_runs_the_pde_gp_in_four_variables():
    """Rule 7: Poisson's −∇²u = f with the optimum inside (a source of either sign, written on
    either side, its conditions declared or not) runs pde-gp in 4 to 6 variables, where the
    source-free Laplace and Helmholtz equations run the plain GP; not a source whose sign keeps the
    maximum principle (u superharmonic: its minimum on the boundary), not a Helmholtz operator with
    a source (its own solutions oscillate inside); in 7, beyond what pde-gp was measured in, rule 6
    (pinn-bo) or, with conditions, rule 8 (the plain GP)."""
    for d in (4, 5, 6, 7):
        names = sp.symbols(f"x1:{d + 1}")
        u = sp.Function("u")(*names)
        laplacian = sum(u.diff(v, 2) for v in names)
        box = Box((0.0,) * d, (1.0,) * d, tuple(map(str, names)))
        varying = sp.sin(7 * names[0]) * names[1]        # both signs on the box
        method = "pde-gp" if d <= 6 else "pinn-bo"
        choice = choose_method(box, PDE(-laplacian, rhs=varying))
        assert choice.method == method and ("known source" in choice.reason) is (d <= 6)
        assert choose_method(box, PDE(-laplacian - varying, rhs=0)).method == method
        assert choose_method(box, PDE(-laplacian, rhs=-1)).method == method       # subharmonic: inside
        with_face = choose_method(box, PDE(-laplacian, rhs=varying, boundary=[(names[0], 0, 0)]))
        assert with_face.method == ("pde-gp" if d <= 6 else "gp-ei")
        assert ("known source" in with_face.reason) is ("and on its boundary conditions" in with_face.reason) is (d <= 6)
        if d <= 6:
            assert choose_method(box, PDE(-laplacian, rhs=1)).method == "gp-ei"       # superharmonic
            assert choose_method(box, PDE(laplacian + 20 * u, rhs=varying)).method == "gp-ei"
            assert choose_method(box, PDE(-laplacian, rhs=0)).method == "gp-ei"


def test_a_maximum_principle_in_three_variables_or_more_runs_the_plain_gp():
    """In its own variables: Laplace's equation in x, y with an integer parameter stays with pde-gp."""
    names = sp.symbols("x1:4")
    u = sp.Function("u")(*names)
    box = Box((0.0,) * 3, (1.0,) * 3, tuple(map(str, names)))
    choice = choose_method(box, PDE(sum(u.diff(v, 2) for v in names), rhs=0))
    assert choice.method == "gp-ei" and "maximum principle" in choice.reason
    assert choose_method(box, PDE(sum(u.diff(v, 2) for v in names) + 14 * u, rhs=0)).method == "pde-gp"
    assert choose_method(mixed_box("integer"), LAPLACE).method == "pde-gp"


def test_constraints_choose_the_constrained_gp_and_say_the_pde_is_left_out():
    choice = choose_method(BOX, LAPLACE, constraints=(Constraint("stress"),))
    assert choice.method == "gp-cei"
    assert "stress" in choice.reason and "PDE is not used" in choice.reason


def test_a_categorical_variable_chooses_the_mixed_gp_and_an_integer_keeps_the_pde_gp():
    assert choose_method(mixed_box("choice"), LAPLACE).method == "gp-ei"
    integer = choose_method(mixed_box("integer"), LAPLACE)
    assert integer.method == "pde-gp" and "k as a parameter" in integer.reason


def test_several_objectives():
    two = {"f": "minimize", "g": "minimize"}
    assert choose_method(BOX, {"f": LAPLACE}, objectives=two).method == "pde-gp"
    assert choose_method(BOX, {"f": LIOUVILLE}, objectives=two).method == "gp-ehvi"
    assert choose_method(BOX, None, objectives=two).method == "gp-ehvi"
    constrained = choose_method(BOX, {"f": LAPLACE}, constraints=(Constraint("c"),), objectives=two)
    assert constrained.method == "gp-ehvi" and "constraints" in constrained.reason


def test_every_choice_is_a_method_that_takes_the_problem():
    """The optimiser built under auto is the chosen method, records why, and starts with the same
    streams as the method named outright (its proposals are the named method's)."""
    opt = make_optimizer(AUTO, BOX, 3, pde=LAPLACE)
    assert opt.name == "pde-gp" and opt.choice.method == "pde-gp"
    named = make_optimizer("pde-gp", BOX, 3, pde=LAPLACE)
    assert named.choice is None
    assert np.array_equal(opt.ask(), named.ask())
    for box, pde, constraints in ((mixed_box("choice"), LAPLACE, ()), (BOX, LAPLACE, (Constraint("c"),)),
                                  (BOX, SIGN, ()), (mixed_box("integer"), LAPLACE, ())):
        chosen = make_optimizer(AUTO, box, 0, pde=pde, constraints=constraints)
        assert chosen.name == chosen.choice.method


def test_auto_takes_no_settings():
    with pytest.raises(MethodError, match="method_params: method auto chooses the method"):
        make_optimizer(AUTO, BOX, 0, params={"num_restarts": 2}, pde=LAPLACE)


def test_a_problem_declares_its_boundary_data():
    problem = Problem("plate", BOX, lambda p: 0.0, "maximize", pde=LAPLACE, boundary_continuous=False)
    choice = choice_for(problem)
    assert choice.method == "pde-gp" and "angle functions" in choice.reason
    anisotropic = Problem("plate", BOX, lambda p: 0.0, "maximize", pde=ANISOTROPIC, boundary_continuous=False)
    assert choice_for(anisotropic).method == "pde-gp"
    tensor = Problem("plate", BOX, lambda p: 0.0, "maximize", pde=TENSOR, boundary_continuous=False)
    assert choice_for(tensor).method == "pde-gp"
    varying = Problem("plate", BOX, lambda p: 0.0, "maximize", pde=GRADED, boundary_continuous=False)
    assert choice_for(varying).method == "pde-gp"
    # a conductivity that vanishes inside the box: no maximum principle read, the data's jump ignored
    vanishing = PDE(((x - 0.5) * T.diff(x)).diff(x) + ((x - 0.5) * T.diff(y)).diff(y), rhs=0)
    degenerate = Problem("plate", BOX, lambda p: 0.0, "maximize", pde=vanishing, boundary_continuous=False)
    assert "maximum principle" not in choice_for(degenerate).reason


def test_data_that_jump_in_three_variables_run_the_edge_functions_or_the_network():
    """In a box, Laplace's operator (one with a conductivity along the axes or a tensor, a flow, a
    loss, a graded conductor's or a graded tensor's with a uniform flow, a reaction, both or neither)
    gets pde-gp with the edges' functions; coefficients that vary otherwise, which they do not take,
    pinn-bo."""
    names = sp.symbols("x1:4")
    u = sp.Function("u")(*names)
    box = Box((0.0,) * 3, (1.0,) * 3, tuple(map(str, names)))
    laplace = choose_method(box, PDE(sum(u.diff(v, 2) for v in names), rhs=0), boundary_continuous=False)
    assert laplace.method == "pde-gp" and "along its edges" in laplace.reason and "edges' angle" in laplace.reason
    axes = PDE(u.diff(names[0], 2) + 4 * u.diff(names[1], 2) + u.diff(names[2], 2), rhs=0)
    assert choose_method(box, axes, boundary_continuous=False).method == "pde-gp"
    flow = PDE(sum(u.diff(v, 2) for v in names) - 2 * u.diff(names[0]) - u, rhs=0)
    assert choose_method(box, flow, boundary_continuous=False).method == "pde-gp"
    mixed = PDE(sum(u.diff(v, 2) for v in names) + u.diff(names[0], names[1]), rhs=0)
    assert choose_method(box, mixed, boundary_continuous=False).method == "pde-gp"
    helmholtz = PDE(sum(u.diff(v, 2) for v in names) + u.diff(names[0], names[1]) + 9 * u, rhs=0)
    assert choose_method(box, helmholtz, boundary_continuous=False).method == "pde-gp"       # smooth: rule 12
    graded = PDE(sum(((1 + names[0]) * u.diff(v)).diff(v) for v in names), rhs=0)
    assert choose_method(box, graded, boundary_continuous=False).method == "pde-gp"
    carried = PDE(graded.lhs[0] - 2 * u.diff(names[1]), rhs=0)               # graded, and a flow
    assert choose_method(box, carried, boundary_continuous=False).method == "pde-gp"
    tensor = ((2.0, 0.6, 0.3), (0.6, 1.0, 0.2), (0.3, 0.2, 1.5))
    composite = sum(((1 + names[0]) * sum(tensor[i][j] * u.diff(names[j]) for j in range(3))).diff(names[i])
                    for i in range(3))
    for law in (composite, composite - 2 * u.diff(names[1]) + u.diff(names[2])):     # a graded tensor, with a flow
        chosen = choose_method(box, PDE(law, rhs=0), boundary_continuous=False)
        assert chosen.method == "pde-gp" and "edges' angle" in chosen.reason
    for law in (graded.lhs[0] - 3 * u, graded.lhs[0] + 3 * u, composite - 2 * u.diff(names[1]) + 3 * u):  # reactions
        chosen = choose_method(box, PDE(law, rhs=0), boundary_continuous=False)
        assert chosen.method == "pde-gp" and "edges' functions" in chosen.reason
    varying = PDE(graded.lhs[0] - names[2] * u.diff(names[1]), rhs=0)        # a flow that varies
    assert choose_method(box, varying, boundary_continuous=False).method == "pinn-bo"


WITH_EDGES = PDE(T.diff(x, 2) + T.diff(y, 2), rhs=0, boundary=[(x, 0, 0)])


def test_boundary_conditions_choose_the_pde_gp_that_conditions_on_them():
    """pde-gp where the rule would otherwise give the boundary to pinn-bo (which does not take the
    conditions) or, in 3 variables under the maximum principle, to the plain GP; the plain GP under
    the maximum principle from 4 variables, for a PDE that is not first order in a time (the wave
    equation) from 4 and for any PDE from 5, where pde-gp with conditions paid nothing or was not
    measured."""
    choice = choose_method(BOX, WITH_EDGES, boundary_continuous=False)
    assert choice.method == "pde-gp" and "with 1 boundary condition:" in choice.reason
    for dim, laplace_method, heat_method in [(3, "pde-gp", "pde-gp"), (4, "gp-ei", "pde-gp"), (5, "gp-ei", "gp-ei"),
                                             (8, "gp-ei", "gp-ei")]:
        wave_method = laplace_method
        names = [f"x{i}" for i in range(dim)]
        symbols = sp.symbols(names)
        u = sp.Function("u")(*symbols)
        laplacian = sum(u.diff(s, 2) for s in symbols[:-1])
        box = Box((0.0,) * dim, (1.0,) * dim, tuple(names))
        laplace = PDE(laplacian + u.diff(symbols[-1], 2), rhs=0, boundary=[(symbols[0], 0, 0)])
        heat = PDE(u.diff(symbols[-1]) - laplacian, rhs=0, boundary=[(symbols[0], 0, 0)])
        wave = PDE(u.diff(symbols[-1], 2) - laplacian, rhs=0, boundary=[(symbols[0], 0, 0)])
        assert choose_method(box, laplace, boundary_continuous=True).method == laplace_method
        assert choose_method(box, heat).method == heat_method
        assert choose_method(box, wave).method == wave_method
        if dim == 4:
            assert "not of first order in a time" in choose_method(box, wave).reason
            assert "maximum principle" in choose_method(box, laplace, boundary_continuous=True).reason


def test_an_evolution_equation_is_first_order_in_one_variable_and_second_in_the_others():
    """The heat equation with a drift and a source is; the wave equation (second order in time),
    Laplace's, a first-order transport equation and one whose time is a parameter are not."""
    t, s = sp.symbols("t s")
    u = sp.Function("u")(x, y, t)
    assert _evolution(PDE(u.diff(t) - u.diff(x, 2) - u.diff(y, 2) + 2 * u.diff(x), rhs=x * t))
    assert not _evolution(PDE(u.diff(t, 2) - u.diff(x, 2) - u.diff(y, 2), rhs=0))
    assert not _evolution(PDE(u.diff(t, 2) + u.diff(x, 2) + u.diff(y, 2), rhs=0))
    assert not _evolution(PDE(u.diff(t) + u.diff(x) + u.diff(y), rhs=0))
    with_parameter = PDE(T.diff(x) - T.diff(y, 2), rhs=0).for_variables(("x", "y", "s"))
    assert _evolution(with_parameter) and with_parameter.derivative_orders() == {"x": 1, "y": 2, "s": 0}
    assert not _evolution(PDE(T.diff(x, 2) + T.diff(y, 2), rhs=0).for_variables(("x", "y", "s")))


@pytest.mark.parametrize("method", ["pinn-bo", "neural-cbo"])
def test_a_method_of_the_residual_alone_refuses_boundary_conditions(method):
    with pytest.raises(MethodError, match=f"^method: '{method}' trains on the PDE's residual and does not take its "
                                          "boundary conditions; pde-gp conditions on them$"):
        make_optimizer(method, BOX, 0, pde=WITH_EDGES)
