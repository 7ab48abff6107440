"""Surrogates, shared by the methods: NTK-parametrised networks (:mod:`~pinnbo.models.mlp`), their
tangent features and Neural-BO's network (:mod:`~pinnbo.models.ntk`), the physics-informed network
(:mod:`~pinnbo.models.pinn`), the Bayesian last layer (:mod:`~pinnbo.models.last_layer`), one
BoTorch GP stack (:mod:`~pinnbo.models.gp`), the GP of a network's residuals
(:mod:`~pinnbo.models.residual_gp`) and output transforms (:mod:`~pinnbo.models.transforms`)."""
