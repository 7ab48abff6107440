"""The PDE-GP: a harmonic function from a few values and Laplace's equation, the mean of a GP
conditioned on a PDE alone satisfies it at fresh points, the plain GP is the textbook one, BoTorch
reads its posterior, and a nonlinear PDE has no linear form (only a linearisation)."""

from __future__ import annotations

import math

import pytest
import sympy as sp
import torch

from pinnbo.models.pde_gp import PDEGP
from pinnbo.pde import PDE, PDEError
from pinnbo.streams import sobol_unit

x, y = sp.symbols("x y")
T = sp.Function("T")(x, y)
LAPLACE = PDE(T.diff(x, 2) + T.diff(y, 2), rhs=0).linear_form()
LOWER = torch.tensor([0.0, 0.0], dtype=torch.float64)
WIDTHS = torch.tensor([2.0, 3.0], dtype=torch.float64)


def harmonic(unit: torch.Tensor) -> torch.Tensor:
    p = LOWER + unit * WIDTHS
    return torch.exp(p[:, 0]) * torch.sin(p[:, 1])


def sobol(n: int, seed: int) -> torch.Tensor:
    return torch.as_tensor(sobol_unit(n, 2, seed, "pde-gp-test"))


def relative_rmse(model: PDEGP, test: torch.Tensor) -> float:
    with torch.no_grad():
        mean, _ = model.mean_and_variance(test)
    truth = harmonic(test)
    return float((mean - truth).pow(2).mean().sqrt() / truth.std())


def test_laplaces_equation_and_twelve_values_give_a_harmonic_function():
    """e^x sin y on [0, 2] × [0, 3] from 12 values: with ∇²f = 0 at 128 points the mean is within
    1 % of the function's spread over the box (RMS); the same GP without the PDE is off by more
    than 10 %."""
    X, Z, test = sobol(12, 0), sobol(128, 1), torch.rand(400, 2, dtype=torch.float64,
                                                            generator=torch.Generator().manual_seed(0))
    with_pde = PDEGP(X, harmonic(X), Z, LAPLACE, LOWER, WIDTHS)
    plain = PDEGP(X, harmonic(X), None, None, LOWER, WIDTHS)
    assert relative_rmse(with_pde, test) < 0.01 < 0.1 < relative_rmse(plain, test)


def test_a_gp_conditioned_on_the_pde_alone_has_a_mean_that_satisfies_it():
    """∇²f = 4 at 128 points and no observation: the posterior mean's Laplacian, by autograd at 50
    fresh points inside the box, is 4."""
    source = PDE(T.diff(x, 2) + T.diff(y, 2), rhs=4).linear_form()
    model = PDEGP(torch.zeros(0, 2, dtype=torch.float64), torch.zeros(0, dtype=torch.float64), sobol(128, 1),
                  source, LOWER, WIDTHS, start={"lengthscale": 0.5 * WIDTHS, "outputscale": 10.0, "pde_noise": 1e-6})
    unit = (0.15 + 0.7 * torch.rand(50, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(2)))
    physical = (LOWER + unit * WIDTHS).requires_grad_(True)
    mean, _ = model.mean_and_variance((physical - LOWER) / WIDTHS)
    (gx,) = torch.autograd.grad(mean.sum(), physical, create_graph=True)
    laplacian = sum(torch.autograd.grad(gx[:, i].sum(), physical, retain_graph=True)[0][:, i] for i in range(2))
    torch.testing.assert_close(laplacian, torch.full((50,), 4.0, dtype=torch.float64), rtol=0, atol=0.05)


def test_without_a_pde_it_is_the_textbook_gp_and_botorch_reads_its_posterior():
    X = sobol(10, 3)
    values = harmonic(X)
    model = PDEGP(X, values, None, None, LOWER, WIDTHS)
    ell, s2, noise = model.lengthscale, model.outputscale, model.noise
    P = LOWER + X * WIDTHS
    new = torch.rand(6, 2, dtype=torch.float64, generator=torch.Generator().manual_seed(4))
    Q = LOWER + new * WIDTHS
    kernel = lambda a, b: s2 * torch.exp(-0.5 * (((a[:, None] - b[None]) / ell) ** 2).sum(-1))  # noqa: E731
    ytilde = (values - values.mean()) / values.std()
    K = kernel(P, P) + noise * torch.eye(10, dtype=torch.float64)
    mean = values.mean() + values.std() * kernel(Q, P) @ torch.linalg.solve(K, ytilde)
    cov = (kernel(Q, Q) - kernel(Q, P) @ torch.linalg.solve(K, kernel(P, Q))) * values.std() ** 2
    posterior = model.posterior(new[None])
    torch.testing.assert_close(posterior.mean.reshape(-1), mean, rtol=1e-8, atol=1e-10)
    torch.testing.assert_close(posterior.covariance_matrix[0], cov + 1e-12 * torch.eye(6, dtype=torch.float64),
                               rtol=1e-6, atol=1e-9)
    batched = model.posterior(new[:, None, :])                         # (6, 1, 2): six one-point posteriors
    torch.testing.assert_close(batched.variance.reshape(-1), torch.diagonal(cov) + 1e-12, rtol=1e-6, atol=1e-9)


def test_a_pde_the_data_contradict_never_overrules_them():
    """Data of e^x sin y with the PDE ∇²f = 50 (wrong): the mean still passes through the data, and
    the evidence says the PDE fits them far worse than the right one."""
    X = sobol(16, 0)
    wrong = PDE(T.diff(x, 2) + T.diff(y, 2), rhs=50).linear_form()
    model = PDEGP(X, harmonic(X), sobol(64, 1), wrong, LOWER, WIDTHS)
    with torch.no_grad():
        mean, _ = model.mean_and_variance(X)
    assert float((mean - harmonic(X)).abs().max() / harmonic(X).std()) < 0.01
    right = PDEGP(X, harmonic(X), sobol(64, 1), LAPLACE, LOWER, WIDTHS)
    assert right.log_likelihood > model.log_likelihood + 20


def test_a_nonlinear_pde_has_no_linear_form():
    with pytest.raises(PDEError, match=r"equation 0: .* is not linear in the unknown T\(x, y\)"):
        PDE(T * T.diff(x) + T.diff(y, 2), rhs=0).linear_form()
    assert math.isfinite(float(LAPLACE.source(sobol(4, 0)).sum()))


def test_leave_one_out_is_each_observation_predicted_from_the_others_and_the_pde():
    """The closed form Σ_i log N(y_i; μ_−i, σ²_−i) from one inverse equals conditioning the joint
    Gaussian of the other observations and the PDE rows on each held-out value, one at a time."""
    X, Z = sobol(8, 0), sobol(24, 1)
    model = PDEGP(X, harmonic(X), Z, LAPLACE, LOWER, WIDTHS,
                  start={"lengthscale": 0.4 * WIDTHS, "outputscale": 2.0, "noise": 1e-3, "pde_noise": 1e-4})
    raw = model._raw({"lengthscale": 0.3 * WIDTHS, "outputscale": 1.5, "noise": 1e-2, "pde_noise": 1e-3})
    K = model._covariance(*model._unpack(raw))
    t = model.target
    expected = 0.0
    for i in range(len(X)):
        rest = [j for j in range(len(t)) if j != i]
        weights = torch.linalg.solve(K[rest][:, rest], K[rest, i])
        mean, variance = weights @ t[rest], K[i, i] - weights @ K[rest, i]
        expected += float(-0.5 * torch.log(2 * math.pi * variance) - 0.5 * (t[i] - mean) ** 2 / variance)
    assert model._leave_one_out(raw) == pytest.approx(expected, rel=1e-9)


def test_a_refit_starts_from_the_warm_fit_and_its_long_starts():
    """The first fit runs every long start of ``FIRST_LENGTHSCALES`` (and the short one where the
    collocation resolves it); a refit runs the warm start and the long starts it is given, and keeps
    whichever ends with the better evidence, so it is never worse than the warm start alone."""
    from pinnbo.models.pde_gp import FIRST_LENGTHSCALES

    X, Z = sobol(12, 0), sobol(64, 1)
    begun = []
    optimise = PDEGP._optimise

    def recording(self, raw, curvature=None):
        begun.append((self._unpack(raw)[0] / WIDTHS).tolist())
        return optimise(self, raw, curvature)

    PDEGP._optimise = recording
    try:
        first = PDEGP(X, harmonic(X), Z, LAPLACE, LOWER, WIDTHS)
        firsts = list(begun)
        begun.clear()
        refit = PDEGP(X, harmonic(X), Z, LAPLACE, LOWER, WIDTHS, start=first.hyperparameters(), long_starts=(0.3,))
        refits = list(begun)
        begun.clear()
        warm = PDEGP(X, harmonic(X), Z, LAPLACE, LOWER, WIDTHS, start=first.hyperparameters())
        warms = list(begun)
    finally:
        PDEGP._optimise = optimise
    assert firsts[:2] == [[pytest.approx(f)] * 2 for f in FIRST_LENGTHSCALES]
    assert refits == [pytest.approx((first.lengthscale / WIDTHS).tolist()), [pytest.approx(0.3)] * 2]
    assert warms == refits[:1]
    assert refit.log_likelihood >= warm.log_likelihood


def test_a_line_search_into_a_covariance_that_does_not_factorise_keeps_the_best_point_it_evaluated():
    """L-BFGS's line search interpolates an infinite evidence (a covariance that does not factorise)
    into NaN parameters, where the evidence is NaN, and ends there; the fit keeps the best finite
    point it evaluated instead. A bowl whose minimum lies beyond a wall of infinite values: the line
    search's first extrapolation lands past the wall."""
    X = sobol(12, 0)
    model = PDEGP(X, harmonic(X), None, None, LOWER, WIDTHS)
    start = model.raw.detach().clone()
    centre = start + 3.0
    evaluated = []

    def walled_bowl(raw):
        # as the evidence: infinite past the wall, NaN at NaN parameters
        beyond = bool(torch.isfinite(raw).all()) and float((raw.detach() - start).max()) >= 1.5
        value = torch.tensor(math.inf, dtype=raw.dtype) if beyond else ((raw - centre) ** 2).sum()
        evaluated.append(float(value.detach()))
        return value

    model._negative_log_likelihood = walled_bowl
    raw, value, at_start, *_ = model._optimise(start)
    assert not all(math.isfinite(v) for v in evaluated)      # the line search did hit the wall
    assert math.isfinite(value) and bool(torch.isfinite(raw).all())
    assert value == min(v for v in evaluated if math.isfinite(v)) < ((start - centre) ** 2).sum()
    assert float(walled_bowl(raw)) == value
    assert at_start == ((start - centre) ** 2).sum()


def test_a_fit_of_many_observations_stops_sooner_and_where_a_tight_one_ends(monkeypatch):
    """The tolerance grows with the observations (the evidence and its curvature do): on 400
    values of e^x sin y with Laplace's equation the fit takes no more evaluations than with the
    40-observation tolerance, and its evidence and posterior mean are that fit's."""
    import pinnbo.models.pde_gp as pde_gp

    X, Z, test = sobol(400, 0), sobol(128, 1), sobol(50, 2)
    counts = {}
    evidence = PDEGP._negative_log_likelihood

    def fit(name):
        calls = []
        monkeypatch.setattr(PDEGP, "_negative_log_likelihood", lambda self, raw: calls.append(1) or evidence(self, raw))
        model = PDEGP(X, harmonic(X), Z, LAPLACE, LOWER, WIDTHS)
        counts[name] = len(calls)
        with torch.no_grad():
            return model.log_likelihood, model.mean_and_variance(test)[0]

    shipped = fit("shipped")
    monkeypatch.setattr(pde_gp, "FIT_TOLERANCE_PER_OBSERVATION", 0.0)
    tight = fit("tight")
    assert counts["shipped"] <= counts["tight"]
    assert shipped[0] == pytest.approx(tight[0], abs=1e-3)
    assert torch.allclose(shipped[1], tight[1], rtol=1e-5, atol=1e-6 * float(tight[1].abs().max()))


def test_a_warm_fit_from_the_last_fits_curvature_ends_where_one_from_scratch_does_in_fewer_steps(monkeypatch):
    """The data grown by one, a warm fit started from the previous warm fit's L-BFGS curvature pairs
    ends at the optimum a warm fit from the identity reaches (its evidence and posterior mean), with
    fewer evaluations of the evidence; it passes its own pairs on, and a model kept at its start
    (``fit=False``) passes those on unchanged."""
    X, Z, test = sobol(24, 0), sobol(64, 1), sobol(40, 2)
    first = PDEGP(X[:21], harmonic(X[:21]), Z, LAPLACE, LOWER, WIDTHS)
    assert "curvature" not in first.hyperparameters()           # a long start's pairs do not go on
    warm = PDEGP(X[:22], harmonic(X[:22]), Z, LAPLACE, LOWER, WIDTHS, start=first.hyperparameters())
    pairs = warm.hyperparameters()["curvature"]
    assert pairs.shape[:1] == (2,) and 1 <= pairs.shape[1] <= 10 and pairs.shape[2] == 5   # ℓ_x, ℓ_y, s², σ², ε
    evidence = PDEGP._negative_log_likelihood
    calls = []
    monkeypatch.setattr(PDEGP, "_negative_log_likelihood", lambda self, raw: calls.append(1) or evidence(self, raw))
    fits = {}
    for name, start in (("scratch", {k: v for k, v in warm.hyperparameters().items() if k != "curvature"}),
                        ("curvature", warm.hyperparameters())):
        calls.clear()
        model = PDEGP(X[:23], harmonic(X[:23]), Z, LAPLACE, LOWER, WIDTHS, start=start)
        with torch.no_grad():
            fits[name] = (len(calls), model.log_likelihood, model.mean_and_variance(test)[0], model)
    (scratch_calls, scratch_evidence, scratch_mean, _), (calls_with, evidence_with, mean_with, model) = \
        fits["scratch"], fits["curvature"]
    assert calls_with < scratch_calls
    assert evidence_with == pytest.approx(scratch_evidence, abs=1e-3)
    assert torch.allclose(mean_with, scratch_mean, rtol=1e-4, atol=1e-4 * float(scratch_mean.abs().max()))
    assert not torch.equal(model.hyperparameters()["curvature"], pairs)
    kept = PDEGP(X[:23], harmonic(X[:23]), Z, LAPLACE, LOWER, WIDTHS, start=warm.hyperparameters(), fit=False)
    assert torch.equal(kept.hyperparameters()["curvature"], pairs)


def test_curvature_that_would_step_too_far_gives_way_to_a_fit_from_the_identity(monkeypatch):
    """Pairs of an inverse Hessian 10⁶ I predict a first step that gains far more than a nat: the
    warm fit starts from the identity instead, and ends where a fit without pairs does. Forced to
    take them anyway, its line search breaks down past the covariance's factorisable region and
    the fit runs again from the identity, to the same end."""
    import pinnbo.models.pde_gp as pde_gp

    X, Z = sobol(23, 0), sobol(64, 1)
    first = PDEGP(X[:22], harmonic(X[:22]), Z, LAPLACE, LOWER, WIDTHS)
    start = first.hyperparameters()
    eye = torch.eye(5, dtype=torch.float64)
    wild = {**start, "curvature": torch.stack([eye * 1e-6, eye])}       # y = e_k / 10⁶, s = e_k
    plain = PDEGP(X, harmonic(X), Z, LAPLACE, LOWER, WIDTHS, start=start)
    runs = []
    optimise = PDEGP._optimise
    monkeypatch.setattr(PDEGP, "_optimise", lambda self, raw, curvature=None:
                        runs.append(optimise(self, raw, curvature)) or runs[-1])
    declined = PDEGP(X, harmonic(X), Z, LAPLACE, LOWER, WIDTHS, start=wild)
    assert [run.seeded for run in runs] == [False]
    assert declined.log_likelihood == pytest.approx(plain.log_likelihood, abs=1e-3)
    runs.clear()
    monkeypatch.setattr(pde_gp, "_predicted_gain", lambda state, gradient: 0.0)
    rescued = PDEGP(X, harmonic(X), Z, LAPLACE, LOWER, WIDTHS, start=wild)
    assert [run.seeded for run in runs] == [True, False] and runs[0].curvature is None
    assert rescued.log_likelihood == pytest.approx(plain.log_likelihood, abs=1e-3)
