"""``method: auto``: the method for a problem, chosen from what the problem declares
(docs/guide/methods.md, "What auto does").

The rule, in order, the first branch that applies:

1. Several objectives: pde-gp where every objective's PDE is linear, the variables are real,
   log-scale or integer and no constraint is a black box (a PDE-GP per objective under
   qLogNEHVI), gp-ehvi otherwise.
2. Black-box constraints: gp-cei (no physics method models a constraint).
3. A categorical variable: gp-ei with its mixed kernel (the PDE-GP's kernel takes numbers only).
4. No PDE: gp-ei.
5. A PDE the PDE-GP cannot condition on (a nonlinear term with no derivative to linearise by):
   pinn-bo, whose residual takes any PDE.
6. A PDE in more than ``MEASURED_DIMENSION`` variables and no boundary condition: pinn-bo, which
   was measured from 10 to 50 variables (docs/results.md, "High-dimensional functions with a
   PDE"); pde-gp, whose collocation points thin out as the dimension grows (docs/algorithms.md,
   "PDE-GP"), was measured up to 6.
7. One linear PDE with a known source, L[u] = f with f not zero, in more than ``PHYSICS_DIMENSION``
   variables and at most ``SOURCE_DIMENSION``, whose operator L keeps the maximum principle while
   the PDE with its source does not (Poisson's −∇²u = f with the optimum inside): pde-gp, with its
   boundary conditions where it declares them. L's own solutions have no interior extremum, so
   the interior's shape is the source's, which the PDE-GP conditions on, half its collocation
   points (three quarters for a concentrated source) drawn where the source is large, and in 6
   variables twice the points for a source spread over the box. With the
   PDE alone it reached 1% on every seed of a Poisson problem (``poisson_nd``) and of a steady advection–diffusion problem
   (``advection_diffusion_nd``) in 4 and 5 variables in a sixth to a half of gp-ei's proposals,
   and in 6 on 10 and 9 seeds of 10 where gp-ei reached it on 6 and none (docs/results.md, "Three
   variables and more"); on the source-free Helmholtz and heat equations it saved few or none
   (rule 8).
8. A PDE in more than ``PHYSICS_DIMENSION`` variables without boundary conditions (and at most
   ``MEASURED_DIMENSION``), or more than ``CONDITIONED_DIMENSION`` with them: gp-ei. With the PDE
   alone pde-gp needed 0.8 of the plain GP's proposals on the heat equation in 4 variables and as
   many on Helmholtz's, and in 6 it matched the GP on both (on Helmholtz's 1% on 6 seeds of 10
   against 5, no significant difference; docs/results.md, "Three variables and more"), at a
   dearer step. Declared conditions
   paid in 4 variables (the heat equation's zero edges: a quarter of the GP's proposals; but see
   rule 11) and not in 6; pinn-bo does not take them.
9. A PDE whose maximum principle puts the optimum on the boundary, no boundary condition, and
   boundary data the problem declares discontinuous (``Problem.boundary_continuous`` False: a heat
   plate whose edges disagree at a corner, a box whose faces disagree along an edge): the supremum
   is then a limit beside the jump. pde-gp where the PDE is in two variables (c ∇²f = g, a
   conductivity that differs along the axes, is a tensor, varies over the plate or both, heat
   carried by a flow), or in three with a constant conductivity (along the axes or a tensor, with
   a flow or a loss) or a graded one (with a uniform flow, a tensor or both), whose GP then
   carries the jumps in the corner or edge functions (:mod:`pinnbo.models.corners`; a fifth of the
   better GP's proposals or fewer on the heat plates, every seed; where the coefficients vary, a
   graded conductor's divided by √k, or the operator's frozen at each corner; on the heat boxes
   whose optimum is a face's limit at an edge, at rest, carried by a flow, with a tensor, graded
   and carried by a flow, or a graded tensor with a flow or without, every seed where the GPs and
   pinn-bo reached 1% on two seeds of 10 or fewer, on a graded one at rest 9 seeds of 10 where they
   reached it on none, and about as many as gp-ei's where it is inside a face, one seed of 10
   short); pinn-bo
   otherwise, whose residual fit follows a jump that the PDE-GP's smooth kernel approaches only
   slowly, proposal by proposal along the edge.
10. A PDE whose maximum principle puts the optimum on the boundary, in 3 of its own variables or
   more (with boundary conditions, more than ``CONDITIONED_PRINCIPLE_DIMENSION``): gp-ei. The
   PDE-conditioned posterior is confident on faces no observation has reached, and its bound
   settles on the best face seen; the plain GP explores them. Declared conditions pin the faces
   they hold on, which paid in 3 variables and not in 4.
11. A PDE in more than ``PHYSICS_DIMENSION`` variables, with boundary conditions, that is not an
    evolution equation (first order in one of its variables, a time, second in the others:
    :func:`_evolution`): gp-ei. The heat equation's modes fade in time, so the data need pin down
    only the slowest few; the wave equation's never fade, and its data must pin down a displacement
    and a velocity: with its fixed faces declared, in 4 variables pde-gp reached 1% on 5 seeds of 10
    against gp-ei's 7 (docs/results.md, "Three variables and more"). Damped (the telegraph
    equation, second order in time), whose modes fade too, it reached 1% on 9 seeds of 10, but in
    more proposals than gp-ucb (25.5 against 23 on 8): fading alone did not make the PDE pay.
12. Every other PDE, linear or nonlinear, with its boundary conditions if it declares any: pde-gp,
    the one method that conditions on them, with the corner or edge functions where the boundary
    data jump (a reaction's, in a uniform or a graded body, Helmholtz's: :mod:`pinnbo.models.corners`).
    Conditioned exactly on a
    linear PDE (on a nonlinear one through its linearisation) it needs a few proposals where
    pinn-bo, which must first train its network on the residual, needed more than a plain GP on
    the smooth problems measured (docs/results.md, "Does the PDE pay?").

The rule reads only declarations (nothing is evaluated), so a resumed run chooses again the
method it chose.
"""

from __future__ import annotations

from dataclasses import dataclass

from pinnbo.errors import PDEError
from pinnbo.models.corners import carries_jumps

AUTO = "auto"
#: The most variables in which pde-gp was measured against the GPs (docs/results.md, "Three
#: variables and more"); beyond, rule 6 runs pinn-bo.
MEASURED_DIMENSION = 6
#: The most variables in which pde-gp, with the PDE alone, needed at most half the GPs' proposals on
#: Helmholtz's and the heat equation (docs/results.md, "Three variables and more"; Laplace's goes to
#: gp-ei by rule 10 from 3 variables); above, rule 8 runs gp-ei.
PHYSICS_DIMENSION = 3
#: The same with the PDE's boundary conditions declared, for an evolution equation (the heat
#: equation's zero edges; :func:`_evolution`; rule 11 runs gp-ei on any other above
#: ``PHYSICS_DIMENSION``).
CONDITIONED_DIMENSION = 4
#: The most variables of its own in which pde-gp, conditioned on declared boundary conditions too,
#: needed fewer proposals than the GPs under a maximum principle (Laplace's problem with its faces
#: at the origin declared: half the better GP's in 3 variables, as many in 4); beyond, rule 10 runs
#: gp-ei.
CONDITIONED_PRINCIPLE_DIMENSION = 3
#: The most variables in which pde-gp, with a known source and an operator that keeps the maximum
#: principle, needed fewer proposals than the GPs on every seed (a Poisson and an advection–diffusion
#: problem; rule 7), its collocation points drawn where the source is large from 4 variables
#: (:data:`pinnbo.optimizers.pde_gp.SOURCE_WEIGHTED_DIMENSION`); above, the dimension rules apply
#: as to any PDE.
SOURCE_DIMENSION = 6


@dataclass(frozen=True)
class Choice:
    """The chosen method and the reason, one sentence (the summary's and the live display's)."""

    method: str
    reason: str


def _linearisable(pde) -> bool:
    if pde.is_linear():
        return True
    try:
        pde.linearised_form()
    except PDEError:
        return False
    return True


def _evolution(pde) -> bool:
    """Whether the PDE is first order in exactly one of its own variables (a time) and of second
    order or more in each other: the heat equation's form, whose solutions' modes fade with the
    time, where the wave equation's, second order in time, do not."""
    orders = pde.derivative_orders()
    own = [orders[name] for name in pde.own_inputs]
    return own.count(1) == 1 and all(order >= 2 for order in own if order != 1)


def _shaped_by_source(pde, bounds) -> bool:
    """Whether the PDE is one linear equation L[h] = g with a source g that is not zero, whose
    operator L keeps the maximum principle (:meth:`PDE.minimum_on_boundary` without the source)
    while the equation with its source does not: the optimum may be inside, where the source,
    not L's own solutions, shapes it. (The principle is read of one linear equation only.)"""
    return (pde.expanded[0].source != 0 and pde.minimum_on_boundary(bounds, with_source=False)
            and not pde.minimum_on_boundary(bounds))


def choose_method(domain, pde=None, constraints=(), objectives=None, boundary_continuous=None) -> Choice:
    """The method ``auto`` runs on a problem of design box ``domain``, PDE ``pde`` (one, a mapping
    objective -> PDE, or None), black-box ``constraints``, ``objectives`` (name -> sense) and
    boundary data declared continuous or not (``boundary_continuous``; None: not declared)."""
    kinds = {v.kind for v in domain.variables}
    if objectives and len(objectives) > 1:
        laws = list(pde.values()) if isinstance(pde, dict) else []
        if laws and all(law.is_linear() for law in laws) and "choice" not in kinds and not constraints:
            return Choice("pde-gp", f"{len(objectives)} objectives, {len(laws)} with a linear PDE: a PDE-GP per "
                                    "objective under hypervolume improvement")
        why = "black-box constraints" if laws and constraints else \
            "a categorical variable" if laws and "choice" in kinds else "a nonlinear PDE" if laws else "no PDE"
        return Choice("gp-ehvi", f"{len(objectives)} objectives and {why}: a GP per objective under hypervolume "
                                 "improvement")
    if constraints:
        return Choice("gp-cei", f"black-box constraints ({', '.join(c.name for c in constraints)}): a GP per "
                                "output and constrained expected improvement" + ("; the PDE is not used" if pde else ""))
    if "choice" in kinds:
        return Choice("gp-ei", "a categorical variable: a GP with a mixed kernel" + ("; the PDE is not used" if pde
                                                                                   else ""))
    if pde is None:
        return Choice("gp-ei", "no PDE: a GP with expected improvement")
    if not _linearisable(pde):
        return Choice("pinn-bo", "a PDE with a term that cannot be linearised: a network trained on its residual")
    conditions = getattr(pde, "boundary", ())
    if domain.dim > MEASURED_DIMENSION and not conditions:
        return Choice("pinn-bo", f"a PDE in {domain.dim} variables, more than the {MEASURED_DIMENSION} pde-gp was "
                                 "measured in: a network trained on the PDE's residual")
    if PHYSICS_DIMENSION < domain.dim <= SOURCE_DIMENSION and _shaped_by_source(pde, domain.named_bounds):
        return Choice("pde-gp", f"a linear PDE in {domain.dim} variables with a known source, whose operator keeps "
                                "the maximum principle, so the source shapes the interior: a GP conditioned on it"
                                + (" and on its boundary conditions" if conditions else ""))
    if domain.dim > (CONDITIONED_DIMENSION if conditions else PHYSICS_DIMENSION):
        why = "where the PDE-conditioned GP saved few of a plain GP's proposals or none" if not conditions else \
            "where the PDE-conditioned GP, with its boundary conditions, saved none of a plain GP's proposals " \
            "(pinn-bo does not take them)"
        return Choice("gp-ei", f"a PDE in {domain.dim} variables, {why}: a GP with expected improvement; the PDE is "
                               "not used")
    principle = pde.minimum_on_boundary(domain.named_bounds)       # read after the cheaper branches
    if boundary_continuous is False and principle and not conditions:
        if carries_jumps(domain, pde, boundary_continuous):
            where = "at its corners" if domain.dim == 2 else "along its edges"
            whose = "corners'" if domain.dim == 2 else "edges'"
            return Choice("pde-gp", f"the optimum is on the boundary (maximum principle) and the boundary data jump "
                                    f"{where}: a GP conditioned on the PDE, with the {whose} angle functions for "
                                    "the jumps")
        return Choice("pinn-bo", "the optimum is on the boundary (maximum principle) and the boundary data jump "
                                 "there: a network trained on the PDE's residual follows the jump")
    own = list(getattr(pde, "own_inputs", domain.names))
    if principle and len(own) >= 3 and (not conditions or len(own) > CONDITIONED_PRINCIPLE_DIMENSION):
        return Choice("gp-ei", f"the optimum is on the boundary (maximum principle) in {len(own)} variables, where "
                               "the PDE-conditioned GP stays sure of faces it has not seen: a GP with expected "
                               "improvement")
    if conditions and len(own) > PHYSICS_DIMENSION and not _evolution(pde):
        return Choice("gp-ei", f"a PDE in {len(own)} variables with boundary conditions, not of first order in a "
                               "time as the heat equation is (whose modes fade), where the PDE-conditioned GP saved "
                               "none of a plain GP's proposals on the wave equation: a GP with expected improvement; "
                               "the PDE is not used")
    parameters = [n for n in domain.names if n not in own]
    where = f"in {', '.join(own)}" + (f", with {', '.join(parameters)} as a parameter" if parameters else "")
    how = "conditioned on it" if pde.is_linear() else "conditioned on its linearisation about the GP's mean"
    if conditions:
        where += f", with {len(conditions)} boundary condition{'s' if len(conditions) > 1 else ''}"
        how += " and on them"
    if carries_jumps(domain, pde, boundary_continuous):
        how += f", with the {'corners' if domain.dim == 2 else 'edges'}' functions for the boundary data's jumps"
    return Choice("pde-gp", f"a {'linear' if pde.is_linear() else 'nonlinear'} PDE {where}: a GP {how}")


def choice_for(problem) -> Choice:
    """:func:`choose_method` on a :class:`~pinnbo.problem.Problem`'s declarations (its PDE as the
    optimisers see it, for the minimised values)."""
    return choose_method(problem.domain, problem.minimised_pde, problem.constraints, problem.objectives,
                         problem.boundary_continuous)


def auto_choice(method: str | None, problem) -> Choice | None:
    """What a run of ``method`` on ``problem`` chose under ``auto`` (None: the method was named)."""
    return choice_for(problem) if method == AUTO else None
