"""Shared fixtures: one seeded random fixture (py-pde style), a private field cache, one thread."""

from __future__ import annotations

import os

import numpy as np
import pytest
import torch

torch.set_num_threads(1)
# A pytest-xdist worker inherits COLUMNS=80, and rich reads it once, when the CLI's module-level
# console is made: every later test would then render at 80 columns whatever width it asks for.
os.environ.pop("COLUMNS", None)
os.environ.pop("LINES", None)


@pytest.fixture
def rng() -> np.random.Generator:
    return np.random.default_rng(12345)


@pytest.fixture(autouse=True, scope="session")
def private_field_cache(tmp_path_factory):
    """Heat-plate fields solved by the tests go to a per-session cache, never the user's."""
    folder = tmp_path_factory.mktemp("pinnbo-cache")
    previous = os.environ.get("PINNBO_CACHE")
    os.environ["PINNBO_CACHE"] = str(folder)
    yield folder
    if previous is None:
        os.environ.pop("PINNBO_CACHE", None)
    else:
        os.environ["PINNBO_CACHE"] = previous
