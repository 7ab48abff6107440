"""What a run shows and leaves: the live display (:mod:`~pinnbo.report.live`), summary.json
(:mod:`~pinnbo.report.summary`), the figures (:mod:`~pinnbo.report.figures`) and the formatting
of numbers and tables (:mod:`~pinnbo.report.format`)."""
