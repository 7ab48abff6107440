"""Running a case: the case file's schema (:mod:`~pinnbo.runner.case`), building the problem, the
optimiser and the settings from it (:mod:`~pinnbo.runner.build`), the loop with its one step shared
by ``pinnbo run`` and ask/tell (:mod:`~pinnbo.runner.loop`, :mod:`~pinnbo.runner.asktell`), the
append-only log of evaluations (:mod:`~pinnbo.runner.history`), the optimiser's state files
(:mod:`~pinnbo.runner.state`) and evaluations imported from elsewhere
(:mod:`~pinnbo.runner.warm_start`)."""

#: The environment variable that names a Dask scheduler when ``--scheduler`` is not given. A
#: scheduler is trusted code (Dask's client unpickles what the workers send back), so it never comes
#: from a case file or a results folder.
SCHEDULER_VARIABLE = "PINNBO_SCHEDULER"
