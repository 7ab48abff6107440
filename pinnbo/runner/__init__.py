"""Running a case: the case file's schema (:mod:`~pinnbo.runner.case`), building the problem, the
optimiser and the settings from it (:mod:`~pinnbo.runner.build`), the loop with its one step shared
by ``pinnbo run`` and ask/tell (:mod:`~pinnbo.runner.loop`, :mod:`~pinnbo.runner.asktell`), the
append-only log of evaluations (:mod:`~pinnbo.runner.history`), the optimiser's state files
(:mod:`~pinnbo.runner.state`) and evaluations imported from elsewhere
(:mod:`~pinnbo.runner.warm_start`)."""
