"""The section of a cantilever: the lightest choice of material, standard IPE section and linear
taper that keeps the tip deflection under a limit (docs/guide/problems-and-pdes.md, "Variables of
every kind").

A cantilever of length L under a uniform load q, clamped at x = 0. The section's second moment
tapers linearly in depth towards the free end, I(x) = I₀ (1 − τ x/L)², and its area
A(x) = A₀ (1 − τ x/L), so the mass is ρ A₀ L (1 − τ/2). The deflection w solves the Euler–Bernoulli
equation (E I w'')'' = q with w = w' = 0 at the clamp and M = V = 0 at the free end, by the finite
differences of :mod:`pinnbo.oracles.beam` (for τ = 0 the tip deflection is qL⁴/(8EI₀)). The design
is two choices (material, section) and one real variable (τ); the objective is the mass and the
black-box constraint the tip deflection over the limit L/``limit``, minus 1 (feasible ≤ 0), both
from one solve.
"""

from __future__ import annotations

from pinnbo.oracles.beam import solve_beam
from pinnbo.problem import Box, Constraint, Problem, ProblemError, Variable, register_problem

#: Young's modulus (Pa) and density (kg/m³).
MATERIALS = {"steel": (210e9, 7850.0), "aluminium": (70e9, 2700.0)}
#: European IPE sections: second moment about the strong axis (m⁴) and area (m²).
SECTIONS = {"IPE100": (171e-8, 10.3e-4), "IPE120": (318e-8, 13.2e-4), "IPE140": (541e-8, 16.4e-4),
            "IPE160": (869e-8, 20.1e-4), "IPE180": (1317e-8, 23.9e-4), "IPE200": (1943e-8, 28.5e-4),
            "IPE220": (2772e-8, 33.4e-4)}
CANTILEVER = {"left": {"w": 0, "slope": 0}, "right": {"M": 0, "V": 0}}
GRID = 400


def tip_deflection(material: str, section: str, taper: float, length: float, load: float) -> float:
    """w(L) in metres of the tapered cantilever (module docstring), by finite differences."""
    E, _ = MATERIALS[material]
    inertia, _ = SECTIONS[section]
    solution = solve_beam(EI=f"{E * inertia!r}*(1 - {taper!r}*x/{length!r})^2", q=load, bc=CANTILEVER,
                          bounds=(0.0, length), n=GRID)
    return float(solution.deflection(length))


def mass(material: str, section: str, taper: float, length: float) -> float:
    """ρ A₀ L (1 − τ/2), kg."""
    return MATERIALS[material][1] * SECTIONS[section][1] * length * (1.0 - taper / 2.0)


@register_problem
def beam_section(length: float = 3.0, load: float = 2000.0, limit: float = 250.0) -> Problem:
    """The lightest cantilever section (material, IPE section, taper) whose tip deflection stays under
    L/limit, a finite-difference Euler–Bernoulli solve per design.

    Args:
        length: the cantilever's length L (m).
        load: the uniform load q (N/m).
        limit: the deflection limit is L/limit (250: a common serviceability limit).
    """
    for name, value in (("length", length), ("load", load), ("limit", limit)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ProblemError(f"params.{name}: expected a number > 0, got {value!r}")
    box = Box.of([Variable("material", "choice", choices=tuple(MATERIALS)),
                  Variable("section", "choice", choices=tuple(SECTIONS)), Variable("taper", "real", 0.0, 0.7)])
    allowed = float(length) / float(limit)

    def objective(design: dict) -> tuple[float, dict]:
        w = tip_deflection(design["material"], design["section"], design["taper"], float(length), float(load))
        return (mass(design["material"], design["section"], design["taper"], float(length)),
                {"deflection": w / allowed - 1.0})

    return Problem("beam_section", box, objective, sense="minimize", constraints=(Constraint("deflection"),),
                   description="a cantilever's material, section and taper under a deflection limit")


@register_problem
def beam_pareto(length: float = 3.0, load: float = 2000.0, mass_reference: float = 100.0,
                deflection_reference: float = 0.1) -> Problem:
    """The cantilever of :func:`beam_section` with two objectives: its mass and its tip deflection,
    both minimised, from the same finite-difference solve; the Pareto front trades kilograms for
    millimetres across materials, sections and tapers.

    Args:
        length: the cantilever's length L (m).
        load: the uniform load q (N/m).
        mass_reference: the hypervolume's reference mass (kg).
        deflection_reference: the hypervolume's reference tip deflection (m).
    """
    for name, value in (("length", length), ("load", load), ("mass_reference", mass_reference),
                        ("deflection_reference", deflection_reference)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
            raise ProblemError(f"params.{name}: expected a number > 0, got {value!r}")
    box = Box.of([Variable("material", "choice", choices=tuple(MATERIALS)),
                  Variable("section", "choice", choices=tuple(SECTIONS)), Variable("taper", "real", 0.0, 0.7)])

    def objective(design: dict) -> dict:
        return {"mass": mass(design["material"], design["section"], design["taper"], float(length)),
                "deflection": tip_deflection(design["material"], design["section"], design["taper"], float(length),
                                             float(load))}

    return Problem("beam_pareto", box, objective, objectives={"mass": "minimize", "deflection": "minimize"},
                   reference={"mass": float(mass_reference), "deflection": float(deflection_reference)},
                   description="a cantilever's mass against its tip deflection")
