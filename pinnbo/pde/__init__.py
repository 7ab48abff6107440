"""Symbolic PDEs: the declaration (:mod:`~pinnbo.pde.declaration`), its compilation to a torch
residual (:mod:`~pinnbo.pde.compile`), and the linear and linearised forms with the
maximum-principle analysis Gaussian-process methods use (:mod:`~pinnbo.pde.forms`)."""

from pinnbo.errors import PDEError
from pinnbo.pde.compile import MAX_ORDER, Residual
from pinnbo.pde.declaration import PDE
from pinnbo.pde.forms import LinearForm, LinearisedForm

__all__ = ["MAX_ORDER", "PDE", "LinearForm", "LinearisedForm", "PDEError", "Residual"]
