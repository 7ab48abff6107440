"""Oracles in the box and the isolation of every oracle call: the steady heat plate solved with
py-pde (:mod:`~pinnbo.oracles.heat_plate`), the Euler–Bernoulli beam by finite differences
(:mod:`~pinnbo.oracles.beam`), a program as a simulator (:mod:`~pinnbo.oracles.command`), and the
forked worker and process group every call runs in (:mod:`~pinnbo.oracles.isolation`)."""
