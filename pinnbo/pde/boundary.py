"""Boundary conditions of a PDE, and the linear form a Gaussian process conditions on with them.

A condition B[h] = b holds on the plane where one input takes one value (a face of the design box,
or a plane across it): h = 0 at the fixed ends of a string, ∂h/∂x = 0 on an insulated edge. B is
linear, so, like the PDE's own operator, it keeps a Gaussian process Gaussian: pde-gp conditions on
B[h] = b at points of the plane as it does on L[h] = g at collocation points inside (docs/algorithms.md,
"Boundary conditions"). Where the PDE leaves a family of solutions (every standing wave, every
harmonic function), the conditions pick out the few that fit the boundary, and the data need only
say which of those.

:class:`ConditionedForm` and :class:`ConditionedLinearisedForm` stack the interior's equation and
the conditions' into one equation over stacked points (the interior's first, then each condition's
in turn), with the interface of :class:`~pinnbo.pde.forms.LinearForm` and
:class:`~pinnbo.pde.forms.LinearisedForm`.
"""

from __future__ import annotations

from typing import Mapping, NamedTuple, Sequence

import torch

from pinnbo.pde.compile import MultiIndex, by_order
from pinnbo.pde.forms import EvaluatedForm

__all__ = ["Condition", "ConditionedForm", "ConditionedLinearisedForm", "declared_values"]


class Condition(NamedTuple):
    """B[h] = b on the plane ``input`` = ``at``; ``pde`` is B[h] = b as a one-equation PDE in the
    same unknown, whose linear form is what a Gaussian process conditions on."""

    input: str
    at: float
    pde: object

    def __str__(self) -> str:
        return f"{self.pde.lhs[0]} = {self.pde.rhs[0]} at {self.input} = {self.at:g}"


def declared_values(condition: Condition):
    """Where ``condition`` gives the unknown's value on its plane (c·h = b, no derivative), the
    function that reads it off at physical points (N, d) of that plane, (N,); None for a condition
    on derivatives, which leaves the value unknown."""
    form = condition.pde.linear_form()
    (terms,) = form.terms(torch.zeros(1, len(condition.pde.inputs), dtype=torch.float64))
    if len(terms) != 1 or any(terms[0][0]):
        return None

    def values(points: torch.Tensor) -> torch.Tensor:
        ((_, coefficient),) = form.terms(points)[0]
        return form.source(points)[:, 0] / coefficient.expand(len(points))

    return values


def _stacked(blocks: Sequence[list[tuple[MultiIndex, torch.Tensor]]], sizes: Sequence[int],
             ref: torch.Tensor) -> list[list[tuple[MultiIndex, torch.Tensor]]]:
    """One equation's (α, c_α) pairs over stacked points from each block's pairs over its own: a
    derivative a block does not read has coefficient 0 on that block's points."""
    alphas = sorted({alpha for terms in blocks for alpha, _ in terms}, key=by_order)
    stacked = []
    for alpha in alphas:
        parts = []
        for terms, size in zip(blocks, sizes):
            c = next((c for a, c in terms if a == alpha), None)
            parts.append(ref.new_zeros(size) if c is None else c)
        stacked.append((alpha, torch.cat(parts)))
    return [stacked]


def _split(points: torch.Tensor, sizes: Sequence[int]) -> list[torch.Tensor]:
    if len(points) != sum(sizes):
        raise ValueError(f"{len(points)} points for blocks of {list(sizes)}: a conditioned form takes the "
                         "stacked points it was built for")
    return list(torch.split(points, list(sizes)))


class ConditionedForm:
    """A linear PDE of one equation and its boundary conditions as one linear form over stacked
    points: ``sizes[0]`` interior points, then ``sizes[k]`` points of condition ``k``'s plane."""

    def __init__(self, interior, conditions: Sequence, sizes: Sequence[int]) -> None:
        self._forms, self.sizes = (interior, *conditions), tuple(sizes)
        self.n_equations = 1

    def terms(self, points: torch.Tensor) -> list[list[tuple[MultiIndex, torch.Tensor]]]:
        blocks = _split(points, self.sizes)
        return _stacked([form.terms(block)[0] for form, block in zip(self._forms, blocks)], self.sizes, points[:, 0])

    def source(self, points: torch.Tensor) -> torch.Tensor:
        return torch.cat([form.source(block) for form, block in zip(self._forms, _split(points, self.sizes))])


class ConditionedLinearisedForm:
    """A nonlinear PDE of one equation, linearised about h₀, and its (linear) boundary conditions
    over stacked points, as :class:`ConditionedForm`: ``at(points, derivatives)`` linearises the
    interior about h₀'s derivatives at its own points; the conditions need none of them."""

    def __init__(self, interior, conditions: Sequence, sizes: Sequence[int]) -> None:
        self._interior, self._conditions, self.sizes = interior, tuple(conditions), tuple(sizes)
        self.n_equations = 1
        self.multi_indices: tuple[MultiIndex, ...] = interior.multi_indices

    def at(self, points: torch.Tensor, derivatives: Mapping[MultiIndex, torch.Tensor]) -> EvaluatedForm:
        n = self.sizes[0]
        interior = self._interior.at(points[:n], {alpha: v[:n] for alpha, v in derivatives.items()})
        stacked = ConditionedForm(interior, self._conditions, self.sizes)
        return EvaluatedForm(points, stacked.terms(points), stacked.source(points))
