"""benchmarks/refit_outcomes.py plays pde-gp's deficit gate over replayed refit outcomes as the
optimiser would: a skipped refit keeps the last deficit, one that runs its long starts replaces it."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from pinnbo.optimizers.pde_gp import DEFICIT_PER_OBSERVATION

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("refit_outcomes", ROOT / "benchmarks" / "refit_outcomes.py")
refit_outcomes = importlib.util.module_from_spec(spec)
spec.loader.exec_module(refit_outcomes)


def test_the_gate_is_played_from_the_last_refit_that_ran_its_long_starts():
    k = DEFICIT_PER_OBSERVATION
    # the first fit at 10 trails by 1.5k: 11 is skipped (1.5k > 1k) and 12 runs (1.5k <= 2k); that
    # trails by 5k, so 14, 15 and 16 are skipped (5k > 2k, 3k, 4k) and 18 runs (5k <= 6k)
    found = [(10, 1.5 * k), (11, -1.0), (12, 5 * k), (14, 2.0), (15, 0.0), (16, 3.0), (18, -2.0), (20, 0.0)]
    assert refit_outcomes.gated(found) == [(11, -1.0), (14, 2.0), (15, 0.0), (16, 3.0)]
    # long starts that never trail are never skipped
    assert refit_outcomes.gated([(10, 0.0), (11, -3.0), (12, 0.05)]) == []


def test_a_skip_counts_against_the_gate_only_where_the_long_starts_would_have_replaced_the_warm_fit():
    # (observations, deficit against the chosen fit, long starts against the warm start)
    found = [(10, 30.0, None), (11, 0.0, -0.5), (12, 0.05, 0.05), (14, 40.0, 40.0), (15, 0.0, -1e-4)]
    skipped = [(15, 0.0, -1e-4)]
    assert refit_outcomes.counted(found, skipped) == {"runs": 1, "refits": 4, "won": 1, "tied": 2, "lost": 1,
                                                      "skipped": 1, "skipped_would_replace": 1}


def test_a_long_start_decides_a_refit_only_where_it_alone_ends_best():
    # (observations, deficit, best long − warm, each long start − warm); the first fit has none
    found = [(10, 0.0, None, None),
             (11, 0.0, -0.5, {"0.2": -0.5, "0.6": -0.2}),    # the first start, by 0.3 nats over the second
             (12, 0.0, -1e-4, {"0.2": 0.0, "0.6": -1e-4}),   # the second, by a hair over the others
             (14, 0.0, -0.3, {"0.2": -0.3, "0.6": -0.3}),    # both alike: neither alone
             (15, 2.0, 2.0, {"0.2": 2.0, "0.6": 5.0}),       # the warm start
             (16, 0.0, -0.4, {"0.2": -0.4})]                 # one long start only: it, by 0.4
    tallies = refit_outcomes.decided(found)
    assert (tallies["0.2"]["alone"], tallies["0.2"]["ahead"]) == (2, 2)
    assert (tallies["0.6"]["alone"], tallies["0.6"]["ahead"]) == (0, 1)
