"""A bench's statistics: mean ± standard error, the one-sided Welch test of the reference method
against each baseline, and Benjamini–Hochberg across the baselines."""

from __future__ import annotations

import math
import warnings
from typing import Sequence

import numpy as np
from scipy import stats

#: Significance level of the BH-adjusted p-values shown in the table.
ALPHA = 0.05


def mean_se(values: Sequence[float]) -> dict:
    """Mean and standard error (sample std / √n) of the finite values; se is None for n < 2."""
    finite = np.array([v for v in values if v is not None and math.isfinite(v)], dtype=np.float64)
    n = len(finite)
    return {"mean": float(finite.mean()) if n else None,
            "se": float(finite.std(ddof=1) / math.sqrt(n)) if n > 1 else None,
            "n": n}


def welch_one_sided(reference: Sequence[float], baseline: Sequence[float], sense: str) -> dict:
    """One-sided Welch t-test, H1: the reference is better than the baseline in the problem's sense
    (lower mean when minimising, higher when maximising). p is None when it cannot be computed
    (fewer than two values in a group, or no variance in either)."""
    a = np.array([v for v in reference if v is not None and math.isfinite(v)], dtype=np.float64)
    b = np.array([v for v in baseline if v is not None and math.isfinite(v)], dtype=np.float64)
    alternative = "greater" if sense == "maximize" else "less"
    out = {"alternative": alternative, "t": None, "p_value": None, "n_reference": len(a), "n_baseline": len(b)}
    if len(a) < 2 or len(b) < 2 or (np.ptp(a) == 0 and np.ptp(b) == 0):
        return out
    with warnings.catch_warnings():   # one group without spread: scipy warns, the test stays valid
        warnings.simplefilter("ignore", RuntimeWarning)
        result = stats.ttest_ind(a, b, equal_var=False, alternative=alternative)
    if math.isfinite(result.statistic) and math.isfinite(result.pvalue):
        out["t"], out["p_value"] = float(result.statistic), float(result.pvalue)
    return out


def benjamini_hochberg(p_values: Sequence[float | None]) -> list[float | None]:
    """Benjamini–Hochberg adjusted p-values (``scipy.stats.false_discovery_control``) of the p-values
    that are not None; None stays None. Reject H0_i at level q when adjusted_i <= q."""
    index = [i for i, p in enumerate(p_values) if p is not None]
    out: list[float | None] = [None] * len(p_values)
    if index:
        adjusted = stats.false_discovery_control([p_values[i] for i in index], method="bh")
        for i, value in zip(index, adjusted):
            out[i] = float(value)
    return out


def compare_to_reference(finals: dict[str, Sequence[float]], reference: str, sense: str) -> dict | None:
    """Welch tests of ``reference`` against each other method, BH-corrected across those baselines."""
    if reference not in finals:
        return None
    baselines = [m for m in finals if m != reference]
    tests = {m: welch_one_sided(finals[reference], finals[m], sense) for m in baselines}
    adjusted = benjamini_hochberg([tests[m]["p_value"] for m in baselines])
    for m, p_adj in zip(baselines, adjusted):
        tests[m]["p_adjusted"] = p_adj
        tests[m]["significant"] = None if p_adj is None else bool(p_adj <= ALPHA)
    return {"reference": reference, "statistic": "final best true value",
            "test": "one-sided Welch t-test (H1: reference better), Benjamini-Hochberg across baselines",
            "alpha": ALPHA, "baselines": tests}


def penalise_infeasible(finals: dict[str, list[float | None]], sense: str
                        ) -> tuple[dict[str, list[float | None]], float | None]:
    """Final best-feasible values with each seed that found no feasible point (None) replaced by the
    worst final value of any run of the case; unchanged (all None) when no run found one."""
    found = [v for values in finals.values() for v in values if v is not None and math.isfinite(v)]
    if not found:
        return finals, None
    worst = max(found) if sense == "minimize" else min(found)
    return {m: [worst if v is None else v for v in values] for m, values in finals.items()}, float(worst)


def mean_se_curve(curves: np.ndarray) -> tuple[list, list]:
    """Per-evaluation mean and standard error over the runs with a value there (NaN-aware)."""
    mean, se = [], []
    for column in curves.T:
        stats = mean_se(column.tolist())
        mean.append(stats["mean"])
        se.append(stats["se"])
    return mean, se
