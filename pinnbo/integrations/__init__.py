"""pinnbo inside other tools (:mod:`pinnbo.integrations.optuna`)."""
