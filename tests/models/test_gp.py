"""The BoTorch GP stack: the fitted GPs, the closed-form predictor against BoTorch's posterior and
its gradients, the Matheron paths, a fitted output scale, and Kim & Sanz-Alonso's isotropic kernel."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from botorch.sampling.pathwise import draw_matheron_paths
from gpytorch.mlls import ExactMarginalLogLikelihood

from pinnbo.models.gp import GPPredictor, fit_gp, fit_outputs


@pytest.mark.parametrize("outputs", [1, 3])
def test_the_residual_predictor_equals_the_botorch_posterior(outputs):
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(30, 2))
    Y = np.column_stack([np.sin(3 * X[:, 0]), 5 * X[:, 1] ** 2, X.sum(axis=1) + 1.0])[:, :outputs]
    model = fit_outputs(X, Y, noise_free=False, noise_floor=0.0, start=None)
    q = torch.as_tensor(rng.uniform(size=(50, 2)))
    mean, std, remaining = GPPredictor(model)(q)
    post = model.posterior(q)
    assert mean.shape == std.shape == remaining.shape == (50, outputs)
    np.testing.assert_allclose(mean, post.mean.detach().numpy(), rtol=0, atol=1e-10)
    np.testing.assert_allclose(std, post.variance.detach().sqrt().numpy(), rtol=0, atol=1e-10)
    # the prior variance: the Standardize scale² times the kernel's k(x, x) (Matérn: 1)
    prior = model.outcome_transform.stdvs.reshape(-1).detach().numpy() ** 2
    np.testing.assert_allclose(remaining, std ** 2 / prior, rtol=1e-10)
    assert np.all((remaining >= 0) & (remaining <= 1))


def test_the_residual_moments_have_the_gradient_of_their_finite_differences():
    rng = np.random.default_rng(0)
    X = rng.uniform(size=(25, 2))
    model = fit_outputs(X, np.sin(4 * X[:, :1]) + X[:, 1:] ** 2, noise_free=False, noise_floor=0.0, start=None)
    predictor = GPPredictor(model)
    x = torch.tensor([[0.3, 0.6]], dtype=torch.float64, requires_grad=True)
    for k in range(3):      # mean, std, remaining fraction
        (g,) = torch.autograd.grad(predictor.moments(x)[k].sum(), x)
        h = 1e-6
        fd = [(predictor.moments(x.detach() + h * e)[k] - predictor.moments(x.detach() - h * e)[k]).item() / (2 * h)
              for e in torch.eye(2, dtype=torch.float64)]
        np.testing.assert_allclose(g[0].numpy(), fd, rtol=1e-5, atol=1e-8)


def test_moments_and_paths_are_the_moments_and_botorchs_matheron_paths_with_their_gradients():
    """The fused evaluation (one k(x, X) for ρ and the paths' update term) against BoTorch's own
    ``draw_matheron_paths`` path and :meth:`GPPredictor.moments`, values and gradients, K = 3 draws,
    with a fitted output scale (PINN-BO's default residual GP)."""
    rng = np.random.default_rng(3)
    X = rng.uniform(size=(40, 2))
    model = fit_outputs(X, np.sin(4 * X[:, :1]) + X[:, 1:] ** 2, noise_free=False, noise_floor=0.0, start=None,
                        outputscale=True)
    torch.manual_seed(0)
    path = draw_matheron_paths(model, sample_shape=torch.Size([3]))
    predictor = GPPredictor(model)
    x = torch.tensor(rng.uniform(size=(16, 2)), dtype=torch.float64, requires_grad=True)
    *moments, paths = predictor.moments_and_paths(x, path)
    expected = path(x).reshape(3, -1).T
    assert paths.shape == (16, 3)
    np.testing.assert_allclose(paths.detach().numpy(), expected.detach().numpy(), rtol=1e-12, atol=1e-12)
    for got, want in zip(moments, predictor.moments(x)):
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-14)
    (g,) = torch.autograd.grad(paths.sum() + moments[2].sum(), x)
    (h,) = torch.autograd.grad(expected.sum() + predictor.moments(x)[2].sum(), x)
    np.testing.assert_allclose(g.numpy(), h.numpy(), rtol=1e-9, atol=1e-12)


def clustered_residuals() -> tuple[np.ndarray, np.ndarray]:
    """The beam's trapped search in small: 12 spread designs on [0, 0.6] whose residuals follow
    sin 20x (amplitude 1), and 60 more piled within 1e-3 of x = π/20, where sin 20x = 0 (the
    network fits the spot it keeps evaluating, so its residuals there are ~0)."""
    spread = np.linspace(0.0, 0.6, 12)
    cluster = np.pi / 20 + np.linspace(0.0, 1e-3, 60)
    X = np.concatenate([spread, cluster])[:, None]
    return X, np.sin(20 * X)


def test_a_learned_residual_prior_variance_is_not_collapsed_by_a_cluster_of_evaluations():
    """``Standardize`` sets the GP's prior sd to the residuals' sample sd, which the 60 near-zero
    residuals of the cluster drag to ~0.3 of the spread points' 0.7; a fitted output scale
    (PINN-BO's residual GP) is set by the marginal likelihood, which counts the
    correlated cluster about as one point, so far from the data the GP's sd stays near the
    function's amplitude. Its moments are the posterior's and its Matheron path is finite."""
    X, r = clustered_residuals()
    far = torch.tensor([[1.0]], dtype=torch.float64)
    data = fit_outputs(X, r, noise_free=False, noise_floor=0.0, start=None)
    learned = fit_outputs(X, r, noise_free=False, noise_floor=0.0, start=None, outputscale=True)
    _, data_sd, data_rho = GPPredictor(data)(far)
    mean, learned_sd, learned_rho = GPPredictor(learned)(far)
    assert data_rho.item() > 0.9 and learned_rho.item() > 0.9
    assert data_sd.item() == pytest.approx(r.std(ddof=1) * np.sqrt(data_rho.item()), rel=1e-6)
    assert r.std(ddof=1) < 0.35
    assert learned_sd.item() > 0.5 and learned_sd.item() > 2 * data_sd.item()
    with torch.no_grad():
        posterior = learned.posterior(far)
        assert mean.item() == pytest.approx(posterior.mean.item(), abs=1e-8)
        assert learned_sd.item() == pytest.approx(posterior.variance.sqrt().item(), rel=1e-6)
        torch.manual_seed(0)
        assert np.isfinite(draw_matheron_paths(learned, sample_shape=torch.Size([1]))(far).item())


def test_the_isotropic_kernel_is_kim_and_sanz_alonsos_gp_at_its_maximum_likelihood():
    """``kernel: isotropic``: one lengthscale for every input, zero mean and unit prior variance on
    the standardised outputs, noise at the floor, and the lengthscale at the maximum of the marginal
    likelihood: no lengthscale on a dense grid scores higher, and the posterior mean is the textbook
    k(x, X) K⁻¹ ỹ computed by hand with the fitted lengthscale."""
    rng = np.random.default_rng(5)
    X = rng.random((40, 3))
    y = np.sin(5 * X[:, 0]) + X[:, 1] ** 2 - X[:, 2]
    model = fit_gp(X, y, noise_free=True, kernel="isotropic")
    ell = model.covar_module.lengthscale.detach().reshape(-1)
    assert ell.numel() == 1 and not hasattr(model.covar_module, "outputscale")
    mll = ExactMarginalLogLikelihood(model.likelihood, model)
    model.train()

    def score(lengthscale):
        model.covar_module.lengthscale = lengthscale
        with torch.no_grad():
            return float(mll(model(*model.train_inputs), model.train_targets))

    fitted = float(ell)
    best = score(fitted)
    assert all(score(float(g)) <= best + 1e-9 for g in np.logspace(-2, 1.5, 400))
    model.covar_module.lengthscale = fitted
    model.eval()
    ytilde = (-y - (-y).mean()) / (-y).std(ddof=1)            # Standardize: sample sd, of −y

    def matern52(a, b):
        r = np.sqrt(5.0) * np.linalg.norm(a[:, None] - b[None], axis=-1) / fitted
        return (1 + r + r ** 2 / 3) * np.exp(-r)

    noise = model.likelihood.noise.detach().numpy().reshape(-1)     # the floor, in standardised units
    assert noise == pytest.approx(1e-5 * (len(X) - 1) / len(X))     # np.var's n against Standardize's n − 1
    K = matern52(X, X) + np.diag(noise)
    new = rng.random((7, 3))
    expected = matern52(new, X) @ np.linalg.solve(K, ytilde) * (-y).std(ddof=1) + (-y).mean()
    with torch.no_grad():
        got = model.posterior(torch.as_tensor(new)).mean.reshape(-1).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-8)
