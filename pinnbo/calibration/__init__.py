"""Model calibration: Gaussian-process posterior approximation from BO design points
(Kim & Sanz-Alonso, §5; docs/guide/calibration.md)."""

from pinnbo.calibration.calibrate import (DEFAULT_SAMPLES, MAX_SAMPLES, Calibration, CalibrationError, calibrate,
                                         check_samples)
from pinnbo.calibration.posterior import LogPosterior, calibration_of, calibration_problem

__all__ = ["DEFAULT_SAMPLES", "MAX_SAMPLES", "Calibration", "CalibrationError", "LogPosterior", "calibrate", "calibration_of",
           "calibration_problem", "check_samples"]
