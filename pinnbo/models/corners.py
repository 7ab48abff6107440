"""The corner functions of a rectangle: solutions of a PDE's homogeneous part that jump where two
edges meet (docs/algorithms.md, "Boundary data that jump at a corner").

Where a plate's two edges carry different data at a shared corner, Laplace's solution jumps there:
in the quarter plane with data A on one edge and B on the other it is A + (B − A) θ_c/(π/2), with
θ_c the angle seen from the corner c, and near a corner of the plate it differs from that by a
function continuous at c. The angle is harmonic, so a Gaussian process conditioned on ∇²f = g may
add it to its prior with an unknown amplitude without breaking the physics, and what remains is
continuous, which a smooth kernel models. Each function is 0 along the corner's horizontal edge
(the second coordinate at its bound), 1 along the vertical one and ½ at the corner itself, where a
plate's value is the mean of its two edges'.

A model may take them centred instead (``centred``), the angles less ½: −½ along the horizontal
edge, ½ along the vertical one and 0 at the corner. The angle's factor below solves the operator
alone (a constant, Laplace's), so the centred functions carry the same jumps, but an amplitude's
prior then puts the same variance on the jump's two sides. With the angle itself the horizontal
edge's side of every jump is the smooth part's alone, its limit predicted from the designs inside
with no doubt about the jump: where the search covers the whole box (a PDE without the maximum
principle, :mod:`pinnbo.optimizers.pde_gp`) a supremum on that side was found late, and over the
faces alone the centred functions measured worse (docs/algorithms.md, "Boundary data that jump at a
corner").

A box in three variables whose faces disagree along an edge jumps there, by an amount that varies
along the edge. The angle about the edge, measured in the plane across it, is harmonic in three
variables too (it does not depend on the coordinate along the edge), so the box's twelve edge
functions (:func:`edge_angles`) carry each edge's jump with one amplitude. The jump itself varies
along the edge (the two faces' data differ by a function of the position on it), and what the
functions leave of it is a cliff the smooth kernel can follow only with a lengthscale shortened
across the whole box, or with the PDE given up. The angle times the position s along the edge is
harmonic as well, so a model adds each edge function times ``EDGE_SLOPE`` (2s − 1)
(:func:`edge_slopes`; under a flow along the edge, the exponential profile that the operator along
the edge annihilates), a jump that varies along the edge about its mean by up to ``EDGE_SLOPE``
times the mean's prior spread at the edge's ends: slopes as uncertain as the mean spent proposals
on the limits at edges and vertices (docs/algorithms.md, "Boundary data that jump at a corner").
A jump that bends along the edge (a face's bump meeting another face's ramp) leaves the same cliff
by the edge's middle, so each function also comes times ``EDGE_CURVE`` P₂(s), the shifted Legendre
polynomial of degree 2 (:func:`edge_curvatures`); it solves no operator, and the model puts the
operator's values on it into its covariance.
A function constant along the edge solves
a constant operator Σ A_ii ∂²/∂z_i² + b·∇ + c (diagonal) where it solves the operator's part across
the edge, in the edge's two other variables, so an edge's function is the corner function of that
part (below) at the edge, constant along it: a flow tilts it downstream across the edge and a loss
fades it away from the edge (:func:`edge_functions`).

The same holds under L = Σ A_ij ∂²/∂z_i∂z_j + b·∇ + c with constants and (A_ij) definite
(:meth:`pinnbo.pde.PDE.constant_operator`; taken here with A positive definite). With f = e^{α·z} v,
α = −½ A⁻¹b, and ζ = M⁻¹z for any M with A = MMᵀ, L f = e^{α·z}(Δ_ζ v + μ v) with
μ = c − ¼ bᵀA⁻¹b. In ζ the box is a parallelogram whose corner opens by ω, with cos ω =
−s A_xy/√(A_xx A_yy) (s = ±1, the corner's orientation): π/2 without a mixed derivative. The angle θ
seen from the corner in ζ, measured from the image of its horizontal edge, is harmonic there and its
gradient is perpendicular to the radius ρ = |ζ − ζ_c|, so θ·R(ρ) solves Δv + μv = 0 where R solves
R'' + R'/ρ + μR = 0 and is 1 at ρ = 0: R = I₀(κρ), κ = √(−μ), for μ ≤ 0 and R = J₀(kρ), k = √μ, for
μ > 0 (a Helmholtz operator: a reaction that releases heat). The corner function is
e^{α·(z − c)} θ/ω R(ρ), still 0 along the horizontal edge, ½ at the corner and a jump of 1 there, the
fan between the edges stretched and sheared (a conductivity tensor), tilted downstream (a flow),
fading away from the corner (a loss) or oscillating about it (a gain).

Where the coefficients vary the solution's singular part at a corner is still the angle's, in the
coordinates of the principal part frozen there (Grisvard 1985, ch. 5), and a model carries
functions that jump as it does without solving the PDE; the operator's values on them then enter
the model's covariance (:mod:`pinnbo.models.pde_gp`). A graded conductor, ∇·(k(z) A ∇f) with A
constant, gets A's functions divided by √(k/k_c): with f = w/√k the operator is
√k(∇·(A∇w) − w ∇·(A∇√k)) (Liouville's transformation), so on them it is −√k_c θ/ω ∇·(A∇√k),
bounded. The graded conductor may carry a uniform flow b, ∇·(k A ∇f) + b·∇f: frozen at a corner
c its principal part is k_c A, so each corner function is the flow's of ∇·(A∇·) + b·∇ with its
drift and decay divided by k_c, times √(k_c/k(z)); on it the first-order terms that grow as 1/ρ
near the corner cancel to within O(|z − c|/ρ), and the operator stays bounded. In a box's three
variables the same holds along each edge with k(z_e), z_e the point of the edge nearest z; where A
has a mixed derivative the factor takes k at the edge's midpoint instead, since that derivative
with the edge's own coordinate would turn √k(z_e) into a term of order 1/ρ, while the drift's
k(z_e), which multiplies the offset across the edge, stays bounded under it. A reaction c f
(heat released or lost in proportion to the temperature) is frozen along an edge alike, as
c/k(z_e) beside the flow's decay; a plate's graded conductor with a reaction takes the frozen
functions of any other operator (below). Any
other operator gets, at each corner, the functions of the operator frozen there, whose
factor e^{α·(z − c)} I₀(κρ) grows away from the corner as the frozen operator departs from the
PDE's: they are kept within a reach of it (``FROZEN_REACH``).

A model carries them where :func:`jump_shape` says: pde-gp's prior (:mod:`pinnbo.models.pde_gp`)
and, as :class:`CornerKernel`, the GP that recommends a design under noise, which would otherwise
take a corner and the design beside it on its edge for one point.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import math
from dataclasses import dataclass
from typing import Callable, Union

import torch
from gpytorch.kernels import Kernel

from pinnbo.pde.compile import as_tensor, build


#: The prior standard deviation of a box's jump's slope along each edge (:func:`edge_slopes`), as a
#: fraction of its mean's: the slope's functions run from −EDGE_SLOPE to EDGE_SLOPE times the edge
#: function along the edge (docs/algorithms.md, "Boundary data that jump at a corner").
EDGE_SLOPE = 0.3
#: The prior standard deviation of a box's jump's curvature along each edge (:func:`edge_curvatures`),
#: as a fraction of its mean's: the curvature's functions are EDGE_CURVE times the edge function at
#: the edge's two ends and −EDGE_CURVE/2 at its midpoint (docs/algorithms.md, "Boundary data that
#: jump at a corner").
EDGE_CURVE = 0.3
#: The reach of a frozen corner function (:func:`jump_shape`), in units of the length 1/(|α|_A + κ)
#: over which its factor e^{α·d} I₀(κρ) grows by e: the Gaussian's decay overtakes that growth
#: beyond it, the product peaking at e^{FROZEN_REACH²/2} (docs/algorithms.md, "Boundary data that
#: jump at a corner").
FROZEN_REACH = 2.0


@dataclass(frozen=True)
class CornerShape:
    """What the operator makes of the corner functions (module docstring): ``stretch``
    √(det A)/A_yy and ``shear`` A_xy/A_yy, by which the angle's offsets enter (without a mixed
    derivative √(A_xx/A_yy), its own root: the ratio of two roots differs from it in the last bit,
    and 0); ``metric`` (A⁻¹_xx, A⁻¹_xy, A⁻¹_yy), of the radius ρ² = dᵀA⁻¹d; ``drift`` α, ``decay``
    κ where μ ≤ 0 and ``wavenumber`` k where μ > 0 (module docstring); ``reach``, where the shape
    is an operator's frozen at its corner (:func:`jump_shape`), the radius ρ over which its function
    is kept, by the factor e^{−ρ²/(2 reach²)} (inf: everywhere). The default, Laplace's, is the
    plain angle."""

    stretch: float = 1.0
    shear: float = 0.0
    metric: tuple[float, float, float] = (1.0, 0.0, 1.0)
    drift: tuple[float, float] = (0.0, 0.0)
    decay: float = 0.0
    reach: float = math.inf
    wavenumber: float = 0.0


def _at_apex(y: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """Where atan2(y, x) is taken as at its apex (the corner or the edge itself): y = x = 0, where
    it and its gradient are undefined, and wherever y² + x² is below the smallest normal float, whose
    reciprocal, in atan2's gradient, overflows to a NaN (offsets below 10⁻¹⁵⁴ in float64: the
    acquisition's search can step there; the oracle's tolerance takes such a point onto the edge)."""
    return y * y + x * x < torch.finfo(x.dtype).tiny


def _apex_angle(y: torch.Tensor, x: torch.Tensor, opening, centred: bool = False) -> torch.Tensor:
    """atan2(y, x)/``opening``, ½ at its apex (:func:`_at_apex`), with a zero gradient there: every
    corner's and edge's angle function, whatever its shear and stretch; ``centred``: less ½, so 0 at
    the apex (module docstring)."""
    at = _at_apex(y, x)
    one = torch.ones_like(x)
    angle = torch.atan2(torch.where(at, one, y), torch.where(at, one, x)) / opening
    if centred:
        return torch.where(at, torch.zeros_like(angle), angle - 0.5)
    return torch.where(at, torch.full_like(angle, 0.5), angle)


def corner_angles(points: torch.Tensor, lower: torch.Tensor, upper: torch.Tensor,
                  stretch: float = 1.0, shear: float = 0.0, only: int | None = None,
                  centred: bool = False) -> torch.Tensor:
    """θ_c/ω_c at physical ``points`` (N, 2) of the box [lower, upper] for its four corners, in the
    order (x₀, y₀), (x₀, y₁), (x₁, y₀), (x₁, y₁): shape (N, 4), each in [0, 1], differentiable
    everywhere in the box but at its own corner, where it is ½ with a zero gradient. ``stretch`` and
    ``shear`` measure the angle in the coordinates ζ = M⁻¹z of an operator with a conductivity
    tensor (:class:`CornerShape`): with offsets a ≥ 0 across and l ≥ 0 along the corner's vertical
    edge, θ = atan2(stretch·l, a − s·shear·l), s = +1 at (x₀, y₀) and (x₁, y₁), −1 at the other two,
    and ω is θ along the vertical edge (a = 0). ``only``: that corner's column alone, (N, 1);
    ``centred``: each less ½ (module docstring)."""
    columns = []
    for i, (s_x, across) in enumerate(((1.0, points[:, 0] - lower[0]), (-1.0, upper[0] - points[:, 0]))):
        for j, (s_y, along) in enumerate(((1.0, points[:, 1] - lower[1]), (-1.0, upper[1] - points[:, 1]))):
            if only is not None and 2 * i + j != only:
                continue
            sheared = across - s_x * s_y * shear * along if shear else across
            stretched = along * stretch if stretch != 1.0 else along
            opening = math.pi / 2 if not shear else math.atan2(stretch, -s_x * s_y * shear)
            # atan2(0, 0) and its gradient there are not defined: the corner's own value instead
            columns.append(_apex_angle(stretched, sheared, opening, centred))
    return torch.stack(columns, -1)


@dataclass(frozen=True)
class GradedShape:
    """The corner functions of a graded operator ∇·(k(z) A ∇·) + b·∇, b constant
    (:meth:`pinnbo.pde.PDE.divergence_form`): ``shape`` those of ∇·(A∇·), or with a flow, four
    (one per corner) of ∇·(A∇·) + b·∇ with the drift and decay divided by k_c, each divided by
    √(k/k_c) (module docstring); ``conductivity`` k at physical points (N, 2) -> (N,) and
    ``at_corners`` k at the four corners (:func:`corner_angles`' order)."""

    shape: CornerShape | tuple
    conductivity: Callable[[torch.Tensor], torch.Tensor]
    at_corners: tuple[float, float, float, float]


@dataclass(frozen=True)
class EdgeShape:
    """The edge functions of a box in three variables (module docstring; :func:`edge_functions`), of
    an operator Σ A_ii ∂²/∂z_i² + b·∇ + c with constants and A diagonal: ``scales`` √A_ii, by which
    each axis's offsets are divided, so that the angle about each edge is measured where the
    principal part is the Laplacian; ``drift`` α_i = −b_i/(2 A_ii) and ``decay`` κ per axis that the
    edge runs along, κ² = Σ b_i²/(4 A_ii) − c over the two axes across it, or ``wavenumber`` k where
    that is negative, k² = −κ² (a Helmholtz part: J₀(kρ) for I₀(κρ)). The default, Laplace's,
    is the plain angle."""

    scales: tuple[float, float, float] = (1.0, 1.0, 1.0)
    drift: tuple[float, float, float] = (0.0, 0.0, 0.0)
    decay: tuple[float, float, float] = (0.0, 0.0, 0.0)
    wavenumber: tuple[float, float, float] = (0.0, 0.0, 0.0)


@dataclass(frozen=True)
class GradedEdgeShape:
    """The edge functions of a graded operator ∇·(k(z) A ∇·) + b·∇ in three variables, b constant
    (:meth:`pinnbo.pde.PDE.divergence_form`): ``shape`` those of ∇·(A∇·) + b·∇, their drift and
    decay divided by k(z_e) and each function by √(k(z)/k(z_e)), z_e the point of its edge nearest z
    (module docstring); a :class:`CrossEdgeShape` where A has a mixed derivative, each sheared
    function (with a flow, its drift and decay still divided by k(z_e)) divided by √(k(z)/k(m_e))
    instead, m_e its edge's midpoint, so that its jump varies along the edge as 1/√k;
    ``conductivity`` k at physical points (N, 3) -> (N,). ``reaction``: a constant c, + c f (heat
    released or lost in proportion to the temperature), frozen at the edge as c/k(z_e) beside the
    flow's decay: κ² = κ_b²/k(z_e)² − c/k(z_e), κ_b ``shape``'s decay, I₀(κρ) where κ² ≥ 0 and
    J₀(√(−κ²) ρ) where not (:func:`_frozen_radial`)."""

    shape: EdgeShape | CrossEdgeShape
    conductivity: Callable[[torch.Tensor], torch.Tensor]
    reaction: float = 0.0


@dataclass(frozen=True)
class CrossEdgeShape:
    """The edge functions of a box in three variables under a constant operator with a mixed
    derivative: each edge's function is the corner function (:class:`CornerShape`) of the
    operator's part across the edge, in its two other variables, constant along it (module
    docstring); ``shapes`` those parts' shapes for the edges along x, y and z."""

    shapes: tuple[CornerShape, CornerShape, CornerShape]


Shapes = Union[CornerShape, GradedShape, EdgeShape, GradedEdgeShape, CrossEdgeShape, tuple]

#: The box's twelve edges in three variables, :func:`edge_angles`' order: (a, b, c) with the edge
#: along axis c, the angle measured from axis a's offset towards axis b's, a < b; for each, the
#: edges at (lower a, lower b), (lower a, upper b), (upper a, lower b), (upper a, upper b).
EDGE_AXES = ((1, 2, 0), (0, 2, 1), (0, 1, 2))
# (axis, side) of the offset across each edge and of the offset along the angle, EDGE_AXES' order.
_ACROSS = tuple(zip(*[(a, i) for a, b, _ in EDGE_AXES for i in (0, 1) for _ in (0, 1)]))
_ALONG = tuple(zip(*[(b, j) for a, b, _ in EDGE_AXES for _ in (0, 1) for j in (0, 1)]))
# the axis each edge runs along, EDGE_AXES' order
_EDGE_AXIS = tuple(c for _, _, c in EDGE_AXES for _ in range(4))


def _across_along(offsets: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Each edge's two offsets (N, 12), across it and along its angle, from the points' offsets
    from the box's sides (N, 3, 2: axis, lower or upper side)."""
    across, along = _flat_columns(offsets.device)
    flat = offsets.reshape(-1, 6)
    return flat.index_select(1, across), flat.index_select(1, along)


@functools.lru_cache(maxsize=8)
def _flat_columns(device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`_across_along`' columns of the offsets flattened to (N, 6), made once: indexing by
    lists would turn them into tensors at every step of the acquisition's search."""
    return tuple(torch.as_tensor([2 * axis + side for axis, side in zip(*which)], device=device)
                 for which in (_ACROSS, _ALONG))


@functools.lru_cache(maxsize=8)
def _sides(dtype: torch.dtype, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """±1 (12,) per edge and offset: +1 where :func:`_across_along`' offset is from the lower side,
    −1 from the upper, turning the offsets into the box into z − the edge's sides."""
    return tuple(torch.as_tensor([1.0 - 2 * side for side in sides], dtype=dtype, device=device)
                 for sides in (_ACROSS[1], _ALONG[1]))


@functools.lru_cache(maxsize=64)
def _per_edge(values: tuple[float, ...], dtype: torch.dtype, device: torch.device
              ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """A per-axis constant (x, y, z) put on the twelve edges (12,): that of the axis of each edge's
    offset across it, of its offset along the angle (:func:`_across_along`' columns) and of the axis
    the edge runs along; made once, since the acquisition's search evaluates the edge functions at
    every step, where building these anew costs more than using them."""
    values = torch.as_tensor(values, dtype=dtype, device=device)
    return values[list(_ACROSS[0])], values[list(_ALONG[0])], values[list(_EDGE_AXIS)]


@functools.lru_cache(maxsize=64)
def _edge_points(lower: tuple[float, ...], upper: tuple[float, ...], dtype: torch.dtype, device: torch.device,
                 midpoints: bool) -> tuple[torch.Tensor, torch.Tensor]:
    """Which coordinates of a point each edge's point nearest it fixes, and to what (12, 1, 3):
    the two of the faces that meet there; with ``midpoints``, the edge's own coordinate too, at its
    midpoint."""
    fixed = torch.zeros(12, 1, 3, dtype=torch.bool, device=device)
    values = torch.zeros(12, 1, 3, dtype=dtype, device=device)
    bounds = (lower, upper)
    for j, (a, i, b, side) in enumerate(zip(*_ACROSS, *_ALONG)):
        fixed[j, 0, a], fixed[j, 0, b] = True, True
        values[j, 0, a], values[j, 0, b] = bounds[i][a], bounds[side][b]
        if midpoints:
            c = EDGE_AXES[j // 4][2]
            fixed[j, 0, c], values[j, 0, c] = True, (lower[c] + upper[c]) / 2
    return fixed, values


def edge_angles(points: torch.Tensor, lower: torch.Tensor, upper: torch.Tensor,
                scales: tuple[float, float, float] = (1.0, 1.0, 1.0), centred: bool = False) -> torch.Tensor:
    """θ_e/(π/2) at physical ``points`` (N, 3) of the box [lower, upper] about each of its twelve
    edges (:data:`EDGE_AXES`' order): shape (N, 12), each in [0, 1], 1 on the edge's face of axis a,
    0 on its face of axis b, ½ on the edge itself (a box's value there is the mean of its two
    faces'), with a zero gradient there; the offsets divided by ``scales``. The twelve columns go
    through each tensor operation together: they are evaluated at every step of the acquisition's
    search. ``centred``: each less ½ (module docstring)."""
    return _angles(*_across_along(torch.stack([points - lower, upper - points], -1)), scales, centred)


def _angles(across: torch.Tensor, along: torch.Tensor, scales: tuple[float, float, float],
            centred: bool = False) -> torch.Tensor:
    """:func:`edge_angles` from each edge's two offsets (N, 12) into the box (:func:`_across_along`)."""
    if scales != (1.0, 1.0, 1.0):                    # ÷ 1 is exact: the same floats without it
        scale_across, scale_along, _ = _per_edge(scales, across.dtype, across.device)
        across, along = across / scale_across, along / scale_along
    return _apex_angle(along, across, math.pi / 2, centred)


def sheared_edge_angles(points: torch.Tensor, lower: torch.Tensor, upper: torch.Tensor,
                        shape: "CrossEdgeShape", centred: bool = False) -> torch.Tensor:
    """:func:`corner_angles` of each edge's part across it (``shape.shapes``), at physical
    ``points`` (N, 3) of the box [lower, upper], the twelve columns in :func:`edge_angles`' order
    and through each tensor operation together (the acquisition's search evaluates them at every
    step): θ = atan2(stretch·l, a − s·shear·l)/ω with a the offset across the edge from the face of
    its first axis, l from the face of its second, s = +1 at its (lower, lower) and (upper, upper)
    edges and −1 at the other two, ω the angle between the faces; ``centred``: each less ½."""
    across, along = _across_along(torch.stack([points - lower, upper - points], -1))
    stretch, skew, opening = _shears(shape, points.dtype, points.device)
    return _apex_angle(along * stretch, across - skew * along, opening, centred)


@functools.lru_cache(maxsize=64)
def _shears(shape: "CrossEdgeShape", dtype: torch.dtype, device: torch.device
            ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Each edge's stretch, s·shear and opening ω (12,) for :func:`sheared_edge_angles`, made once
    (the acquisition's search evaluates the angles at every step)."""
    parts = [(shape.shapes[c], 1.0 if i == j else -1.0) for _, _, c in EDGE_AXES for i in (0, 1) for j in (0, 1)]
    stretch = torch.as_tensor([part.stretch for part, _ in parts], dtype=dtype, device=device)
    skew = torch.as_tensor([sign * part.shear for part, sign in parts], dtype=dtype, device=device)
    opening = torch.as_tensor([math.pi / 2 if not part.shear else math.atan2(part.stretch, -sign * part.shear)
                               for part, sign in parts], dtype=dtype, device=device)
    return stretch, skew, opening


def sheared_edge_functions(points: torch.Tensor, lower: torch.Tensor, upper: torch.Tensor, shape: CrossEdgeShape,
                           principal: torch.Tensor | None = None, reaction: float = 0.0,
                           centred: bool = False) -> torch.Tensor:
    """The box's twelve edge functions under a constant operator with a mixed derivative and a
    flow, a loss or a gain (``shape``), at physical ``points`` (N, 3), :func:`edge_angles`' order:
    each the corner function of the operator's part across its edge (:func:`corner_functions` of
    that part's :class:`CornerShape`), constant along the edge, the sheared angle times
    e^{α·d} R(ρ) with d the offset from the edge across it and ρ² = dᵀA⁻¹d; the twelve columns
    through each tensor operation together (the acquisition's search evaluates them at every step).
    ``principal`` (N, 12): the factor k of the principal part at each function's edge (a graded
    conductor's, :class:`GradedEdgeShape`), by which α and κ are divided, and ``reaction`` its
    zero-order term, frozen there (:func:`_frozen_radial`); ``centred``: the angles less ½."""
    angles = sheared_edge_angles(points, lower, upper, shape, centred)
    inward = _across_along(torch.stack([points - lower, upper - points], -1))
    across, along = (offset * side for offset, side in zip(inward, _sides(points.dtype, points.device)))
    drift_across, drift_along, m_aa, m_ab, m_bb, decay, wavenumber = _part_factors(shape, points.dtype, points.device)
    exponent = drift_across * across + drift_along * along
    factor = torch.exp(exponent if principal is None else exponent / principal)
    squared = m_aa * across**2 + 2 * m_ab * across * along + m_bb * along**2
    if reaction:
        return angles * factor * _frozen_radial(decay, principal, reaction, squared)
    if bool(decay.any()):
        factor = factor * _radial(torch.special.i0, decay if principal is None else decay / principal.abs(), squared)
    if bool(wavenumber.any()):                   # a graded conductor's parts have none: no principal
        factor = factor * _radial(_bessel_j0, wavenumber, squared)
    return angles * factor


@functools.lru_cache(maxsize=64)
def _part_factors(shape: CrossEdgeShape, dtype: torch.dtype, device: torch.device) -> tuple[torch.Tensor, ...]:
    """Each edge's drift across and along its angle, metric (A⁻¹_aa, A⁻¹_ab, A⁻¹_bb), decay and
    wavenumber (12,) for :func:`sheared_edge_functions`: its part's, made once."""
    parts = [shape.shapes[c] for _, _, c in EDGE_AXES for _ in range(4)]
    columns = zip(*[(*part.drift, *part.metric, part.decay, part.wavenumber) for part in parts])
    return tuple(torch.as_tensor(column, dtype=dtype, device=device) for column in columns)


def _flows(shape: EdgeShape | CrossEdgeShape) -> bool:
    """Whether a box's edge functions carry more than the angles: a drift, a decay or a wavenumber."""
    if isinstance(shape, CrossEdgeShape):
        return any(part.drift != (0.0, 0.0) or part.decay or part.wavenumber for part in shape.shapes)
    return any(shape.drift) or any(shape.decay) or any(shape.wavenumber)


def _radial(bessel, rate, squared: torch.Tensor) -> torch.Tensor:
    """R(ρ) = ``bessel``(rate·ρ) at ρ² = ``squared`` (I₀(κρ) or J₀(kρ), module docstring): √ has no
    gradient at 0 and R(√s) has (R is even), so 1, R's value there, where ρ = 0."""
    at = squared == 0
    radius = torch.sqrt(torch.where(at, torch.ones_like(squared), squared))
    return torch.where(at, torch.ones_like(squared), bessel(rate * radius))


def _frozen_radial(decay: torch.Tensor, principal: torch.Tensor, reaction: float, squared: torch.Tensor
                   ) -> torch.Tensor:
    """R(ρ) of a graded operator with a reaction c frozen at each function's edge (``principal``
    k(z_e), (N, 12)), at ρ² = ``squared``: the part across the edge over k(z_e) has
    κ² = κ_b²/k(z_e)² − c/k(z_e), ``decay`` κ_b (12,) the flow's alone, so I₀(κρ) where κ² ≥ 0 and
    J₀(kρ), k² = −κ², where heat released outweighs the flow (:class:`GradedEdgeShape`). Each root
    is taken of its own side's values only: the other side's would put √0's infinite slope into the
    gradient."""
    rate = (decay / principal) ** 2 - reaction / principal
    grows = rate >= 0
    one = torch.ones_like(rate)
    factor = torch.ones_like(squared)
    if bool(grows.any()):
        kappa = torch.where(grows, torch.sqrt(torch.where(grows, rate, one)), torch.zeros_like(rate))
        factor = factor * _radial(torch.special.i0, kappa, squared)
    if not bool(grows.all()):
        k = torch.where(grows, torch.zeros_like(rate), torch.sqrt(torch.where(grows, one, -rate)))
        factor = factor * _radial(_bessel_j0, k, squared)
    return factor


class _BesselJ(torch.autograd.Function):
    """J₀ and J₁ (``order``) with their derivatives, which torch's ``bessel_j0`` and ``bessel_j1``
    lack: J₀' = −J₁ and J₁' = J₀ − J₁/x, ½ at 0 (J₁(x)/x = ½ − x²/16 + …: below 10⁻⁶ the limit is
    exact to 10⁻¹³). The acquisition's search needs the first derivative of J₀, a varying operator's
    terms on the functions the second."""

    @staticmethod
    def forward(ctx, x: torch.Tensor, order: int) -> torch.Tensor:
        ctx.save_for_backward(x)
        ctx.order = order
        return torch.special.bessel_j1(x) if order else torch.special.bessel_j0(x)

    @staticmethod
    def backward(ctx, grad: torch.Tensor):
        (x,) = ctx.saved_tensors
        if not ctx.order:
            return -grad * _BesselJ.apply(x, 1), None
        small = x.abs() < 1e-6
        safe = torch.where(small, torch.ones_like(x), x)
        slope = _BesselJ.apply(x, 0) - _BesselJ.apply(safe, 1) / safe
        return grad * torch.where(small, torch.full_like(x, 0.5), slope), None


def _bessel_j0(x: torch.Tensor) -> torch.Tensor:
    return _BesselJ.apply(x, 0)


def edge_functions(points: torch.Tensor, lower: torch.Tensor, upper: torch.Tensor, shape: EdgeShape,
                   principal: torch.Tensor | None = None, reaction: float = 0.0, centred: bool = False
                   ) -> torch.Tensor:
    """The box's twelve edge functions of ``shape``'s operator at physical ``points`` (N, 3),
    :func:`edge_angles`' order: each the angle about its edge times e^{α·d} I₀(κρ) (J₀(kρ) for a
    Helmholtz part), d the offset from the edge across it and ρ its length in the scaled coordinates
    (the corner function of the operator's part across the edge: module docstring), 1 on the edge;
    the angles alone without a drift, a decay or a wavenumber. ``principal`` (N, 12): the factor k
    of the principal part at each function's edge (a graded conductor's, :class:`GradedEdgeShape`),
    by which α and κ are divided, and ``reaction`` its zero-order term, frozen there
    (:func:`_frozen_radial`); ``centred``: the angles less ½."""
    if not any(shape.drift) and not any(shape.decay) and not any(shape.wavenumber) and not reaction:
        return edge_angles(points, lower, upper, shape.scales, centred)
    inward = _across_along(torch.stack([points - lower, upper - points], -1))
    angles = _angles(*inward, shape.scales, centred)
    across, along = (offset * side for offset, side in zip(inward, _sides(points.dtype, points.device)))
    drift_across, drift_along, _ = _per_edge(shape.drift, points.dtype, points.device)
    exponent = drift_across * across + drift_along * along
    factor = torch.exp(exponent if principal is None else exponent / principal)
    if any(shape.decay) or any(shape.wavenumber) or reaction:
        scale_across, scale_along, _ = _per_edge(shape.scales, points.dtype, points.device)
        squared = (across / scale_across) ** 2 + (along / scale_along) ** 2
    if reaction:
        decay = _per_edge(shape.decay, points.dtype, points.device)[2]
        return angles * factor * _frozen_radial(decay, principal, reaction, squared)
    if any(shape.decay):
        kappa = _per_edge(shape.decay, points.dtype, points.device)[2]
        kappa = kappa if principal is None else kappa / principal.abs()
        factor = factor * _radial(torch.special.i0, kappa, squared)
    if any(shape.wavenumber):                   # a graded conductor's parts have none: no principal
        factor = factor * _radial(_bessel_j0, _per_edge(shape.wavenumber, points.dtype, points.device)[2], squared)
    return angles * factor


def corner_functions(points: torch.Tensor, lower: torch.Tensor, upper: torch.Tensor,
                     shape: Shapes = CornerShape(), only: int | None = None, centred: bool = False) -> torch.Tensor:
    """The four corner functions of ``shape``'s operator at physical ``points`` (N, 2), in
    :func:`corner_angles`' order: the angles times e^{α·(z − c)} R(ρ) (module docstring), which
    is 1 at each function's own corner; the angles alone where α = 0 and κ = 0. A tuple of four
    shapes (:func:`jump_shape` where the coefficients vary): each corner's function is its own
    shape's; a :class:`GradedShape`: its plain shape's functions times √(k_c/k(z)). ``only``: that
    corner's column alone, (N, 1). An :class:`EdgeShape`: a box's twelve edge functions (N, 12).
    ``centred``: the angles less ½, each function then −½ and ½ times its factor on its two sides
    and 0 at its corner or edge (module docstring)."""
    if isinstance(shape, EdgeShape):
        return edge_functions(points, lower, upper, shape, centred=centred)
    if isinstance(shape, CrossEdgeShape):
        if _flows(shape):
            return sheared_edge_functions(points, lower, upper, shape, centred=centred)
        return sheared_edge_angles(points, lower, upper, shape, centred)
    if isinstance(shape, GradedEdgeShape):
        # The flow's drift and decay take k at each edge's point nearest z (z_e), and so does the
        # factor √(k(z_e)/k(z)); a mixed derivative with the edge's own coordinate would turn an
        # amplitude that varies along the edge into a term of order 1/ρ, so a tensor's factor takes k
        # at the edge's midpoint instead. (The drift's variation along the edge multiplies the
        # offset across it, and stays bounded under that derivative.)
        # frozen: a flow or a reaction, whose coefficients k(z_e) divides
        sheared, frozen = isinstance(shape.shape, CrossEdgeShape), _flows(shape.shape) or bool(shape.reaction)
        bounds = tuple(lower.tolist()), tuple(upper.tolist())
        wanted = [midpoints for midpoints, needed in ((False, frozen or not sheared), (True, sheared)) if needed]
        edge_points = []
        for midpoints in wanted:
            fixed, values = _edge_points(*bounds, points.dtype, points.device, midpoints)
            edge_points.append(torch.where(fixed, values, points.unsqueeze(0)).reshape(-1, 3))
        conductivity = shape.conductivity(torch.cat([*edge_points, points]))      # one evaluation
        on_edges = dict(zip(wanted, conductivity[:-len(points)].reshape(len(wanted), 12, -1).transpose(1, 2)))
        here = conductivity[-len(points):]
        principal = on_edges[False] if frozen else None
        if sheared:
            functions = sheared_edge_functions(points, lower, upper, shape.shape, principal, shape.reaction,
                                               centred) if frozen else \
                sheared_edge_angles(points, lower, upper, shape.shape, centred)
        else:
            functions = edge_functions(points, lower, upper, shape.shape, principal, shape.reaction, centred)
        return functions * torch.sqrt(on_edges[sheared] / here[:, None])
    if isinstance(shape, GradedShape):
        plain = corner_functions(points, lower, upper, shape.shape, only, centred)
        k_c = torch.as_tensor(shape.at_corners, dtype=points.dtype, device=points.device)
        k_c = k_c if only is None else k_c[only:only + 1]
        return plain * torch.sqrt(k_c / shape.conductivity(points)[:, None])
    if isinstance(shape, tuple):
        if only is not None:
            return corner_functions(points, lower, upper, shape[only], only, centred)
        return _frozen_corner_functions(points, lower, upper, shape, centred)
    angles = corner_angles(points, lower, upper, shape.stretch, shape.shear, only, centred)
    if shape.drift == (0.0, 0.0) and shape.decay == 0.0 and shape.reach == math.inf and not shape.wavenumber:
        return angles
    (m_xx, m_xy, m_yy), (alpha, beta) = shape.metric, shape.drift
    factors = []
    for i, x_c in enumerate((lower[0], upper[0])):
        for j, y_c in enumerate((lower[1], upper[1])):
            if only is not None and 2 * i + j != only:
                continue
            dx, dy = points[:, 0] - x_c, points[:, 1] - y_c
            factor = torch.exp(alpha * dx + beta * dy)
            if shape.reach != math.inf or shape.decay or shape.wavenumber:
                squared = m_xx * dx**2 + 2 * m_xy * dx * dy + m_yy * dy**2
            if shape.reach != math.inf:
                factor = factor * torch.exp(-0.5 * squared / shape.reach**2)
            if shape.decay:
                factor = factor * _radial(torch.special.i0, shape.decay, squared)
            if shape.wavenumber:
                factor = factor * _radial(_bessel_j0, shape.wavenumber, squared)
            factors.append(factor)
    return angles * torch.stack(factors, -1)


#: The corners' signs in :func:`corner_angles`' order: +1 where the offset across (along) the
#: corner's vertical edge is from the lower side, −1 from the upper.
_CORNER_SIGNS = ((1.0, 1.0), (1.0, -1.0), (-1.0, 1.0), (-1.0, -1.0))


@functools.lru_cache(maxsize=16)
def _per_corner(shapes: tuple[CornerShape, ...], dtype: torch.dtype, device: torch.device) -> dict:
    """The four shapes' constants as (4,) tensors, made once a run: the acquisition's search
    evaluates the functions at every step, where building these anew would cost more than using
    them. A term no corner's shape has is left out (None)."""
    def tensor(values) -> torch.Tensor:
        return torch.as_tensor(values, dtype=dtype, device=device)

    signs = _CORNER_SIGNS
    return {
        "signs": tensor(signs),
        "skew": tensor([s_x * s_y * one.shear for (s_x, s_y), one in zip(signs, shapes)]),
        "stretch": tensor([one.stretch for one in shapes]),
        "opening": tensor([math.pi / 2 if not one.shear else math.atan2(one.stretch, -s_x * s_y * one.shear)
                           for (s_x, s_y), one in zip(signs, shapes)]),
        "drift": tuple(tensor([one.drift[i] for one in shapes]) for i in range(2)),
        "metric": tuple(tensor([one.metric[i] for one in shapes]) for i in range(3)),
        "reach": tensor([one.reach for one in shapes]) if any(one.reach != math.inf for one in shapes) else None,
        "decay": tensor([one.decay for one in shapes]) if any(one.decay for one in shapes) else None,
        "wavenumber": tensor([one.wavenumber for one in shapes]) if any(one.wavenumber for one in shapes) else None,
    }


def _frozen_corner_functions(points: torch.Tensor, lower: torch.Tensor, upper: torch.Tensor,
                             shapes: tuple[CornerShape, ...], centred: bool = False) -> torch.Tensor:
    """:func:`corner_functions` of four shapes, each corner's its own (N, 4), the four columns
    through each tensor operation together: the acquisition's search evaluates them at every step,
    where a column at a time costs four times the operations' overhead. A term a corner's shape
    lacks enters as its neutral value (a shear of 0, a stretch of 1, a factor of 1), which leaves
    that column's values as its own shape's."""
    c = _per_corner(shapes, points.dtype, points.device)
    corner_x = torch.stack([lower[0], lower[0], upper[0], upper[0]])
    corner_y = torch.stack([lower[1], upper[1], lower[1], upper[1]])
    dx, dy = points[:, :1] - corner_x, points[:, 1:] - corner_y
    across, along = dx * c["signs"][:, 0], dy * c["signs"][:, 1]
    sheared, stretched = across - c["skew"] * along, along * c["stretch"]
    angles = _apex_angle(stretched, sheared, c["opening"], centred)
    (alpha, beta), (m_xx, m_xy, m_yy) = c["drift"], c["metric"]
    factor = torch.exp(alpha * dx + beta * dy)
    squared = m_xx * dx**2 + 2 * m_xy * dx * dy + m_yy * dy**2
    if c["reach"] is not None:
        factor = factor * torch.exp(-0.5 * squared / c["reach"] ** 2)
    if c["decay"] is not None:
        factor = factor * _radial(torch.special.i0, c["decay"], squared)
    if c["wavenumber"] is not None:
        factor = factor * _radial(_bessel_j0, c["wavenumber"], squared)
    return angles * factor


def corner_sides(points: torch.Tensor, lower: torch.Tensor, upper: torch.Tensor, shape: Shapes) -> torch.Tensor:
    """:func:`corner_angles` under ``shape`` (a tuple of four: each corner's own; a box's edges:
    :func:`edge_angles`)."""
    if isinstance(shape, GradedEdgeShape):
        shape = shape.shape
    if isinstance(shape, EdgeShape):
        return edge_angles(points, lower, upper, shape.scales)
    if isinstance(shape, CrossEdgeShape):
        return sheared_edge_angles(points, lower, upper, shape)
    if isinstance(shape, GradedShape):
        shape = shape.shape
    if isinstance(shape, tuple):
        return torch.cat([corner_angles(points, lower, upper, one.stretch, one.shear, k)
                          for k, one in enumerate(shape)], -1)
    return corner_angles(points, lower, upper, shape.stretch, shape.shear)


def jump_shape(domain, pde, boundary_continuous) -> Shapes | None:
    """The shape of the corner functions where a model of this problem adds them, None where it
    does not: boundary data declared to jump (``boundary_continuous`` False), a PDE
    Σ A_ij ∂²f/∂z_i∂z_j + b·∇f + c f = g in the box's two variables with A definite (module
    docstring), and no boundary condition (which they would break). With constant
    coefficients the corner functions solve its homogeneous part. Where they vary they do not
    (:func:`solves_pde` False) but still jump as the solution does: for a graded operator
    ∇·(k(z) A ∇·) + b·∇ with b constant, a :class:`GradedShape`, the functions of ∇·(A∇·) + b·∇
    with the flow's drift and decay divided by k_c, divided by √(k/k_c), on which the operator is
    bounded (Liouville's transformation, :meth:`pinnbo.pde.PDE.divergence_form`); for any other, a
    tuple of four shapes, each corner's function that of the operator frozen at its corner, kept
    within its reach (``FROZEN_REACH``), where the solution's own singular part is the frozen
    one's (Grisvard 1985, ch. 5). In a box's three variables, an :class:`EdgeShape`, the edge
    functions of a constant operator Σ A_ii ∂²f/∂z_i² + b·∇f + c f (diagonal), a
    :class:`CrossEdgeShape` with a mixed derivative, and a :class:`GradedEdgeShape` for a graded
    conductor ∇·(k A ∇f) + b·∇f + c f with b and c constant."""
    if boundary_continuous is not False or pde is None or isinstance(pde, dict) or domain.dim not in (2, 3):
        return None
    own = tuple(getattr(pde, "own_inputs", ()))
    if set(own) != set(domain.names) or getattr(pde, "boundary", ()):
        return None
    order = [own.index(name) for name in domain.names]
    operator = pde.constant_operator()
    if operator is not None:
        return _shape(operator, order) if domain.dim == 2 else _edge_shape(operator, order)
    graded = pde.divergence_form()
    # a plate's graded conductor with a reaction takes the frozen functions below: measured against
    # the graded ones with the reaction frozen at each corner, they missed 1 % on fewer seeds
    # (docs/archive/benchmarks.md, "A reaction in a graded plate or box")
    if graded is not None and not (domain.dim == 2 and graded[3]):
        return _graded(domain, pde, graded, order)
    if domain.dim == 3:
        return None
    shapes = []
    for x_c in (domain.lower[0], domain.upper[0]):
        for y_c in (domain.lower[1], domain.upper[1]):
            frozen = pde.constant_operator(dict(zip(domain.names, (x_c, y_c))))
            shape = None if frozen is None else _shape(frozen, order)
            if shape is None:
                return None
            # e^{α·d} I₀(κρ) grows as e^{(|α|_A + κ)ρ}, |α|_A = √(αᵀAα), away from the corner (J₀
            # stays within ±1), where the frozen operator is no longer the PDE's: kept within
            # ρ ≲ FROZEN_REACH/(|α|_A + κ)
            (m_xx, m_xy, m_yy), (a_x, a_y) = shape.metric, shape.drift
            det = m_xx * m_yy - m_xy**2
            rate = math.sqrt(max((m_yy * a_x**2 - 2 * m_xy * a_x * a_y + m_xx * a_y**2) / det, 0.0)) + shape.decay
            shapes.append(dataclasses.replace(shape, reach=FROZEN_REACH / rate) if rate > 0 else shape)
    return tuple(shapes)


def edge_slopes(functions: torch.Tensor, points: torch.Tensor, lower: torch.Tensor, upper: torch.Tensor,
                shape: Shapes | None = None) -> torch.Tensor:
    """Each of a box's twelve edge ``functions`` (N, 12) at physical ``points`` (N, 3) times
    ``EDGE_SLOPE`` (2g(s) − 1), s the position along its edge from 0 to 1 (module docstring): a jump
    that varies along the edge, −EDGE_SLOPE and EDGE_SLOPE times the function at its two ends. g = s,
    or under a constant operator with a flow along the edge (an :class:`EdgeShape` with a drift
    α_c along the edge's axis c), g = (e^{λLs} − 1)/(e^{λL} − 1), λ = 2α_c = −b_c/A_cc, L the edge's
    length: the operator's part along the edge, A_cc g'' + b_c g', annihilates it, as it does s
    without the flow, and the function's own factor does not vary along the edge, so the product
    still solves the operator. A graded conductor's flow (a :class:`GradedEdgeShape` of an
    :class:`EdgeShape`) takes λ = 2α_c/k(m_e), its principal part frozen at the edge's midpoint m_e
    (the product then solves the operator only near there)."""
    axes = _per_edge_axes(points.device)
    s = (points.index_select(1, axes) - lower[axes]) / (upper[axes] - lower[axes])
    inner = shape.shape if isinstance(shape, GradedEdgeShape) else shape
    if isinstance(inner, EdgeShape) and any(inner.drift):
        rate, flowing = _slope_rates(shape, tuple(lower.tolist()), tuple(upper.tolist()), points.dtype, points.device)
        s = torch.where(flowing, torch.expm1(rate * s) / torch.expm1(rate), s)
    return functions * (EDGE_SLOPE * (2 * s - 1))


@functools.lru_cache(maxsize=64)
def _slope_rates(shape: EdgeShape | GradedEdgeShape, lower: tuple[float, ...], upper: tuple[float, ...],
                 dtype: torch.dtype, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """λL per edge (12,) for :func:`edge_slopes` (1 where there is no flow along the edge, whose
    profile is then s) and where there is one: constants of the run, made once, since the
    acquisition's search evaluates the slopes at every step."""
    graded = isinstance(shape, GradedEdgeShape)
    axes = _per_edge_axes(device)
    widths = torch.as_tensor(upper, dtype=dtype, device=device) - torch.as_tensor(lower, dtype=dtype, device=device)
    rate = 2 * _per_edge((shape.shape if graded else shape).drift, dtype, device)[2] * widths[axes]
    if graded:      # the principal part frozen at the edge's midpoint, k(m_e) A
        rate = rate / shape.conductivity(_edge_points(lower, upper, dtype, device, True)[1][:, 0])
    flowing = rate != 0
    return torch.where(flowing, rate, torch.ones_like(rate)), flowing


@functools.lru_cache(maxsize=8)
def _per_edge_axes(device: torch.device) -> torch.Tensor:
    """:data:`_EDGE_AXIS` as a tensor, made once."""
    return torch.as_tensor(_EDGE_AXIS, device=device)


def edge_curvatures(functions: torch.Tensor, points: torch.Tensor, lower: torch.Tensor, upper: torch.Tensor
                    ) -> torch.Tensor:
    """Each of a box's twelve edge ``functions`` (N, 12) at physical ``points`` (N, 3) times
    ``EDGE_CURVE`` P₂(s), P₂(s) = 6s² − 6s + 1 the shifted Legendre polynomial of degree 2, s the
    position along the edge from 0 to 1: a jump that bends along the edge, orthogonal over it to
    the mean and the slope (:func:`edge_slopes`), EDGE_CURVE times the function at the edge's ends
    and −EDGE_CURVE/2 at its midpoint. No operator is annihilated by it: on Laplace's the product
    gives EDGE_CURVE P₂'' f = 12 EDGE_CURVE f/L² (L the edge's length), which the model puts into its
    covariance (:func:`jump_functions_solve`), leaving the smooth part the correction the PDE asks
    for. (The product's harmonic completion, (P₂(s) − 3ρ²/L²) f with ρ the distance from the edge,
    would grow across the whole box.)"""
    # s as edge_slopes finds it, found again: one node shared by both would change the order in which
    # autograd sums the acquisition's gradient, and with it a run's designs in their last bits
    axes = _per_edge_axes(points.device)
    s = (points.index_select(1, axes) - lower[axes]) / (upper[axes] - lower[axes])
    return functions * (EDGE_CURVE * (6 * s * s - 6 * s + 1))


#: The shapes of a box's edges in three variables, whose functions :func:`jump_functions` extends
#: with their slopes and curvatures.
_BOX_SHAPES = (EdgeShape, CrossEdgeShape, GradedEdgeShape)


def jump_functions(points: torch.Tensor, lower: torch.Tensor, upper: torch.Tensor, shape: Shapes,
                   centred: bool = False) -> torch.Tensor:
    """The functions a model adds to its prior where the boundary data jump (:func:`jump_shape`), at
    physical ``points``: a plate's four corner functions (N, 4), a box's twelve edge functions, their
    slopes along the edges (:func:`edge_slopes`) and their curvatures along them
    (:func:`edge_curvatures`), (N, 36); ``centred`` as for :func:`corner_functions`."""
    functions = corner_functions(points, lower, upper, shape, centred=centred)
    if not isinstance(shape, _BOX_SHAPES):      # a plate's corners
        return functions
    return torch.cat([functions, edge_slopes(functions, points, lower, upper, shape),
                      edge_curvatures(functions, points, lower, upper)], -1)


def jump_functions_solve(shape: Shapes) -> bool:
    """Whether :func:`jump_functions` solve the PDE's homogeneous part: a plate's corner functions
    where :func:`solves_pde` says so; a box's never, since the curvatures along its edges
    (:func:`edge_curvatures`) solve no operator."""
    return solves_pde(shape) and not isinstance(shape, _BOX_SHAPES)


def solves_pde(shape: Shapes) -> bool:
    """Whether the corner functions of ``shape`` (:func:`jump_shape`) solve the PDE's homogeneous
    part: those of a constant operator do, those of a varying one do not."""
    return isinstance(shape, (CornerShape, EdgeShape, CrossEdgeShape))


def _graded(domain, pde, form, order) -> GradedShape | GradedEdgeShape | None:
    """The :class:`GradedShape` of ∇·(k A ∇·) + b·∇ (``form`` (k, A, b, c), c = 0 in two variables),
    k compiled to torch, in a box's three variables the :class:`GradedEdgeShape` (with the reaction
    c); None where k is not of one sign at the corners."""
    k, A, b, c = form
    node = build(k, pde.atoms)
    columns = [domain.names.index(symbol.name) for symbol in pde.atoms.symbols]

    def conductivity(points: torch.Tensor) -> torch.Tensor:
        return as_tensor(node({s: points[:, c] for s, c in zip(pde.atoms.symbols, columns)}, points[:, 0]),
                         points[:, 0])

    corners = torch.tensor(list(itertools.product(*zip(domain.lower, domain.upper))), dtype=torch.float64)
    at_corners = tuple(float(v) for v in conductivity(corners))
    if not (all(v > 0 for v in at_corners) or all(v < 0 for v in at_corners)):
        return None
    if domain.dim == 3:
        edges = _edge_shape((A, b, 0.0), order)
        return None if edges is None else GradedEdgeShape(edges, conductivity, c)
    shape = _shape((A, b, 0.0), order)
    if shape is not None and any(b):
        # the principal part frozen at a corner is k_c A: the flow's drift and decay over k_c there
        shape = tuple(dataclasses.replace(shape, drift=(shape.drift[0] / k_c + 0.0, shape.drift[1] / k_c + 0.0),
                                          decay=shape.decay / abs(k_c)) for k_c in at_corners)
    return None if shape is None else GradedShape(shape, conductivity, at_corners)


def _edge_shape(operator, order) -> EdgeShape | CrossEdgeShape | None:
    """The :class:`EdgeShape` of a constant operator ``(A, b, c)`` in three variables (its inputs
    put in the box's ``order``), a :class:`CrossEdgeShape` where A has a mixed derivative."""
    A, b, c = operator
    if any(A[i][j] for i in range(3) for j in range(3) if i != j):
        A = [[A[i][j] for j in order] for i in order]
        b = [b[i] for i in order]
        parts = [_shape(([[A[a][a], A[a][b_]], [A[b_][a], A[b_][b_]]], [b[a], b[b_]], c), [0, 1])
                 for a, b_, _ in EDGE_AXES]                     # EDGE_AXES: along x, y, z in turn
        return CrossEdgeShape(tuple(parts))
    sign = 1.0 if A[0][0] > 0 else -1.0        # −L has the same solutions
    diagonal = [sign * A[i][i] for i in order]
    b, c = [sign * b[i] for i in order], sign * c
    squared = [sum(b[i] ** 2 / (4 * diagonal[i]) for i in range(3) if i != along) - c for along in range(3)]
    return EdgeShape(tuple(math.sqrt(a) for a in diagonal),
                     tuple(-b[i] / (2 * diagonal[i]) + 0.0 for i in range(3)),     # + 0.0: no −0.0
                     tuple(math.sqrt(k) if k > 0 else 0.0 for k in squared),
                     tuple(math.sqrt(-k) if k < 0 else 0.0 for k in squared))


def _shape(operator, order) -> CornerShape | None:
    """The :class:`CornerShape` of a constant operator ``(A, b, c)`` (its inputs put in the box's
    ``order``)."""
    sign = 1.0 if operator[0][0][0] > 0 else -1.0        # −L has the same solutions
    A = [[sign * operator[0][i][j] for j in order] for i in order]
    b = [sign * operator[1][i] for i in order]
    c = sign * operator[2]
    (a_x, a_xy), (_, a_y) = A
    if a_xy == 0.0:
        # the diagonal case in its own terms: the same floats as the formulas below would give to
        # within their last bit, and the plates' runs depend on the last bit
        mu = c - b[0] ** 2 / (4 * a_x) - b[1] ** 2 / (4 * a_y)
        drift = (-b[0] / (2 * a_x), -b[1] / (2 * a_y))
        stretch, shear, metric = math.sqrt(a_x / a_y), 0.0, (1 / a_x, 0.0, 1 / a_y)
    else:
        det = a_x * a_y - a_xy**2
        metric = (a_y / det, -a_xy / det, a_x / det)                  # A⁻¹
        drift = (-(metric[0] * b[0] + metric[1] * b[1]) / 2, -(metric[1] * b[0] + metric[2] * b[1]) / 2)
        mu = c + (drift[0] * b[0] + drift[1] * b[1]) / 2               # c − ¼ bᵀA⁻¹b
        stretch, shear = math.sqrt(det) / a_y, a_xy / a_y
    return CornerShape(stretch, shear, metric, (drift[0] + 0.0, drift[1] + 0.0),      # + 0.0: no −0.0
                       math.sqrt(-mu) if mu < 0 else 0.0, wavenumber=math.sqrt(mu) if mu > 0 else 0.0)


def carries_jumps(domain, pde, boundary_continuous) -> bool:
    """Whether a model of this problem adds the corner functions (:func:`jump_shape`)."""
    return jump_shape(domain, pde, boundary_continuous) is not None


class CornerKernel(Kernel):
    """ΦΦᵀ of the corner functions, on unit-cube inputs of the box [lower, upper]: added to a
    GPyTorch kernel (under a ``ScaleKernel``, the amplitudes' variance learned), a GP whose mean
    may jump at each corner."""

    def __init__(self, lower: torch.Tensor, upper: torch.Tensor, shape: Shapes = CornerShape()) -> None:
        super().__init__()
        self.lower, self.upper, self.shape = lower, upper, shape

    def forward(self, x1: torch.Tensor, x2: torch.Tensor, diag: bool = False, **params) -> torch.Tensor:
        f1, f2 = (self._functions(x) for x in (x1, x2))
        return (f1 * f2).sum(-1) if diag else f1 @ f2.transpose(-1, -2)

    def _functions(self, unit: torch.Tensor) -> torch.Tensor:
        lower, upper = self.lower.to(unit), self.upper.to(unit)
        points = lower + unit * (upper - lower)
        functions = corner_functions(points.reshape(-1, unit.shape[-1]), lower, upper, self.shape)
        return functions.reshape(*unit.shape[:-1], functions.shape[-1])
