"""A bench's statistics: mean ± standard error, the one-sided Welch test of the reference method
against each baseline, Benjamini–Hochberg across the baselines, and sample efficiency: the
normalised regret, the proposals until it reaches a target (censored at the budget) and a rank test
on them (docs/algorithms.md, "Comparing methods")."""

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


# -- sample efficiency --------------------------------------------------------------------------------
#: Normalised regrets whose proposals-to-target a bench reports.
REGRET_TARGETS = (0.1, 0.01)
#: Normalised regrets below this count as this in the mean of log10 r (an exact hit would be −∞).
REGRET_FLOOR = 1e-8


def target_key(target: float) -> str:
    """The summary's key of the proposals to a normalised regret (0.01 -> "proposals_to_1pct")."""
    return f"proposals_to_{100 * target:g}pct"


def normalised_regret(curve: np.ndarray, optimum: float, initial_values: Sequence[float]) -> np.ndarray:
    """r_n = |f* − best_n| / |f* − m0| per evaluation, m0 the median true value of the seed's initial
    design (common to every method of a seed): 1 is the typical initial point, 0 the optimum. inf
    where best_n is NaN (nothing successful, or with constraints nothing feasible, yet)."""
    finite = [v for v in initial_values if v is not None and math.isfinite(v)]
    scale = abs(optimum - float(np.median(finite))) if finite else 0.0
    gap = np.abs(optimum - np.asarray(curve, dtype=np.float64))
    with np.errstate(divide="ignore", invalid="ignore"):
        r = gap / scale if scale > 0 else np.where(gap == 0, 0.0, np.inf)
    return np.where(np.isnan(r), np.inf, r)


def proposals_to(r: np.ndarray, initial_points: int, target: float) -> int | None:
    """Proposals after the initial design until r_n <= target (0: the initial design got there);
    None when the run never does (censored at its budget)."""
    hits = np.flatnonzero(r <= target)
    return None if not len(hits) else max(0, int(hits[0]) + 1 - initial_points)


def mean_log10_regret(r: np.ndarray, initial_points: int) -> float | None:
    """The mean of log10 max(r_n, REGRET_FLOOR) over the proposals (the area under the log-regret
    curve per proposal: lower is better, and it rewards getting there early); None without a
    finite r_n among them."""
    after = r[initial_points:]
    if not len(after) or not np.isfinite(after).all():
        return None
    return float(np.mean(np.log10(np.maximum(after, REGRET_FLOOR))))


def censored_summary(values: Sequence[int | None], horizon: int) -> dict:
    """Median proposals-to-target and hits of runs censored at ``horizon`` proposals (None: not
    reached). A censored run ranks after every run that got there, so the median is a number while
    at least half the runs got there and None ("not reached") otherwise."""
    n = len(values)
    reached = sorted(v for v in values if v is not None)
    ordered = reached + [math.inf] * (n - len(reached))
    middle = (ordered[(n - 1) // 2], ordered[n // 2]) if n else (math.inf,)
    median = None if math.inf in middle else float(np.mean(middle))
    return {"median": median, "hits": len(reached), "n": n, "horizon": horizon, "values": list(values)}


def censored_rank_test(reference: Sequence[int | None], baseline: Sequence[int | None], horizon: int) -> dict:
    """One-sided Mann–Whitney U test, H1: the reference needs fewer proposals than the baseline. A run
    that never got there ranks after every run that did (all such runs tie), the usual treatment of
    censoring at a common horizon. p is None with fewer than two runs in a group or no spread at all."""
    a = [horizon + 1 if v is None else v for v in reference]
    b = [horizon + 1 if v is None else v for v in baseline]
    out = {"alternative": "less", "u": None, "p_value": None, "n_reference": len(a), "n_baseline": len(b)}
    if len(a) < 2 or len(b) < 2 or len(set(a) | set(b)) < 2:
        return out
    result = stats.mannwhitneyu(a, b, alternative="less")
    out["u"], out["p_value"] = float(result.statistic), float(result.pvalue)
    return out


def compare_proposals(values: dict[str, Sequence[int | None]], reference: str, horizon: int,
                      target: float) -> dict | None:
    """``censored_rank_test`` of ``reference`` against each other method on proposals to ``target``,
    Benjamini–Hochberg across the baselines."""
    if reference not in values:
        return None
    baselines = [m for m in values if m != reference]
    tests = {m: censored_rank_test(values[reference], values[m], horizon) for m in baselines}
    for m, p_adj in zip(baselines, benjamini_hochberg([tests[m]["p_value"] for m in baselines])):
        tests[m]["p_adjusted"] = p_adj
        tests[m]["significant"] = None if p_adj is None else bool(p_adj <= ALPHA)
    return {"reference": reference, "target": target, "statistic": f"proposals until r_n <= {target:g}",
            "test": "one-sided Mann-Whitney U (H1: reference needs fewer), runs that never got there ranked "
                    "last, Benjamini-Hochberg across baselines",
            "alpha": ALPHA, "baselines": tests}
