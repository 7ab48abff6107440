"""The oracles' solved fields go to a folder of each test module's own, never the user's cache."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="module")
def cache_dir(tmp_path_factory):
    path = tmp_path_factory.mktemp("pinnbo-cache")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("PINNBO_CACHE", str(path))
        yield path
