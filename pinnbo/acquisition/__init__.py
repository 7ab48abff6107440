"""Choosing the next design from a surrogate: candidate pools, the minimisation of a differentiable
surrogate and the duplicate rule (:mod:`~pinnbo.acquisition.search`), analytic acquisition
functions (:mod:`~pinnbo.acquisition.analytic`) and TuRBO's trust region
(:mod:`~pinnbo.acquisition.trust_region`)."""
