"""``pinnbo bench``: several methods × several seeds on the same cases, side by side, with statistics.

Protocol: every method runs every case for the seeds given; for a seed all methods share the
initial design and every random stream; the initial points count in the budget; the statistics use
the true (noise-free) values. A bench leaves, per case, each run's own resumable results folder
(``runs/<method>/seed<k>/``), ``curves.csv``, ``table.md``, ``convergence.png`` and ``summary.json``
(:mod:`~pinnbo.bench.tables`). Constrained cases compare the best *feasible* values, a seed without
any feasible point counting as the worst final best-feasible value of any run of the case (leaving
it out would reward failing to find feasibility). Restarting skips complete runs and resumes the
others without repeating an oracle call. Every run uses one torch thread, in this process as in
worker processes, so results do not depend on ``--jobs``.

Modules: options (:mod:`~pinnbo.bench.options`), the grid (:mod:`~pinnbo.bench.plan`), running it
(:mod:`~pinnbo.bench.execute`, one run: :mod:`~pinnbo.bench.job`, on Dask: :mod:`~pinnbo.bench.cluster`), its live display (:mod:`~pinnbo.bench.live`), the statistics
(:mod:`~pinnbo.bench.statistics`), each case's analysis (:mod:`~pinnbo.bench.analysis`) and outputs
(:mod:`~pinnbo.bench.tables`).
"""

from pinnbo.bench.execute import BenchInterrupted, BenchResult, run_bench
from pinnbo.bench.options import BenchError, BenchSettings

__all__ = ["BenchError", "BenchInterrupted", "BenchResult", "BenchSettings", "run_bench"]
