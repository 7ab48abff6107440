"""``pinnbo calibrate`` end to end on a linear-Gaussian model, whose posterior is Gaussian with a
closed-form mean and variance (conjugacy), with the forward model as a Python function and as a
program; and its refusals."""

from __future__ import annotations

import json
import sys
import textwrap

import numpy as np
import pytest
from typer.testing import CliRunner

from pinnbo.cli import app

runner = CliRunner()
SLOPES = np.array([1.0, 2.0, -0.5])
DATA = np.array([2.1, 3.9, -1.2])
NOISE = np.array([0.5, 1.0, 0.25])
PRIOR_MEAN, PRIOR_SD = 1.0, 1.5


def analytic() -> tuple[float, float]:
    """The posterior of x given D = a x + η, η ~ N(0, diag Γ), x ~ N(m0, s0²)."""
    precision = np.sum(SLOPES**2 / NOISE) + 1 / PRIOR_SD**2
    return float((np.sum(SLOPES * DATA / NOISE) + PRIOR_MEAN / PRIOR_SD**2) / precision), float(precision**-0.5)


def write_case(tmp_path, extra: str = "") -> str:
    (tmp_path / "linear.py").write_text(textwrap.dedent(f"""
        import numpy as np
        from pinnbo.calibration import calibration_problem
        from pinnbo.problem import Box

        def linear_model():
            return calibration_problem("linear", lambda x: np.array({SLOPES.tolist()!r}) * np.asarray(x)[0],
                                       data={DATA.tolist()!r}, noise_variance={NOISE.tolist()!r},
                                       prior_mean=[{PRIOR_MEAN}], prior_sd=[{PRIOR_SD}], domain=Box((-4.0,), (6.0,), ("x",)))
    """))
    case = tmp_path / "linear.yaml"
    case.write_text(f"name: linear\nproblem: linear.py:linear_model\nmethod: gp-ucb+\nbudget: 12\ninitial_points: 4\n"
                    f"seed: 3\n{extra}")
    return str(case)


def test_calibrate_recovers_the_conjugate_posterior(tmp_path):
    case, out = write_case(tmp_path), tmp_path / "out"
    result = runner.invoke(app, ["calibrate", case, "--quiet", "--output", str(out), "--samples", "4000"])
    assert result.exit_code == 0, result.output
    folder = out / "calibration"
    for name in ("design.csv", "samples.csv", "posterior.json", "density.png", "surrogate.png"):
        assert (folder / name).is_file(), name
    posterior = json.loads((folder / "posterior.json").read_text())
    mean, sd = analytic()
    stats = posterior["parameters"]["x"]
    assert posterior["sampler"] == "rejection" and posterior["design_points"] == 12
    assert posterior["design_phases"] == {"initial": 4, "optimizer": 4, "exploration": 4}
    assert stats["mean"] == pytest.approx(mean, abs=0.1 * sd)
    assert stats["sd"] == pytest.approx(sd, rel=0.1)
    low, high = stats["interval_95"]
    assert low == pytest.approx(mean - 1.96 * sd, abs=0.2 * sd) and high == pytest.approx(mean + 1.96 * sd, abs=0.2 * sd)
    # Independent draws: R-hat near 1, an effective sample size near the number of draws (ArviZ).
    checks = posterior["diagnostics"]["x"]
    assert abs(checks["r_hat"] - 1) < 0.01 and checks["ess_bulk"] > 3000 and checks["ess_tail"] > 2000
    samples = np.loadtxt(folder / "samples.csv", delimiter=",", skiprows=1)
    assert samples.shape == (4000,) and (folder / "samples.csv").read_text().startswith("x\n")

    again = runner.invoke(app, ["calibrate", case, "--quiet", "--output", str(out), "--samples", "4000", "--resume"])
    assert again.exit_code == 0, again.output
    assert np.array_equal(np.loadtxt(folder / "samples.csv", delimiter=",", skiprows=1), samples)


def test_a_program_as_forward_model(tmp_path):
    (tmp_path / "model.py").write_text(textwrap.dedent(f"""
        import json, sys
        x = float(sys.argv[1])
        print("solving...")
        print(json.dumps([a * x for a in {SLOPES.tolist()!r}]))
    """))
    case = tmp_path / "program.yaml"
    case.write_text(textwrap.dedent(f"""
        name: program
        problem: calibration
        params:
          bounds: {{x: [-4, 6]}}
          data: {DATA.tolist()!r}
          noise_variance: {NOISE.tolist()!r}
          prior_mean: {{x: {PRIOR_MEAN}}}
          prior_sd: {{x: {PRIOR_SD}}}
        oracle: {{command: "{sys.executable} model.py {{x}}", parse: json}}
        method: exploit+
        budget: 10
        initial_points: 4
        seed: 0
    """))
    out = tmp_path / "out"
    result = runner.invoke(app, ["calibrate", str(case), "--quiet", "--output", str(out), "--samples", "3000"])
    assert result.exit_code == 0, result.output
    records = [json.loads(line) for line in (out / "evaluations.jsonl").read_text().splitlines()]
    assert len(records) == 10 and all(r["status"] == "ok" for r in records)
    x = records[0]["x"][0]
    G = SLOPES * x
    expected = -0.5 * np.sum((DATA - G) ** 2 / NOISE) - 0.5 * (x - PRIOR_MEAN) ** 2 / PRIOR_SD**2
    assert records[0]["y"] == pytest.approx(expected, rel=1e-12)
    mean, sd = analytic()
    stats = json.loads((out / "calibration" / "posterior.json").read_text())["parameters"]["x"]
    assert stats["mean"] == pytest.approx(mean, abs=0.15 * sd)


def test_a_program_printing_the_wrong_number_of_outputs_is_a_failed_evaluation(tmp_path):
    from pinnbo.oracles.command import CommandOracle
    from pinnbo.oracles.isolation import OracleFailure

    oracle = CommandOracle(f"{sys.executable} -c 'print(\"1 2\")' {{x}}", ("x",), outputs=3, cwd=tmp_path)
    with pytest.raises(OracleFailure, match="expected 3 numbers on the last line, got 2"):
        oracle([0.0])
    assert np.array_equal(CommandOracle(f"{sys.executable} -c 'print(\"1, 2 3\")' {{x}}", ("x",), outputs=3)([0.0]),
                          [1.0, 2.0, 3.0])


def test_calibrate_refuses_a_problem_that_is_not_a_calibration(tmp_path):
    case = tmp_path / "c.yaml"
    case.write_text("name: c\nproblem: ackley\nparams: {dim: 2}\nmethod: random\nbudget: 5\ninitial_points: 2\n")
    result = runner.invoke(app, ["calibrate", str(case), "--quiet", "--output", str(tmp_path / "o")])
    assert result.exit_code == 2
    assert "problem: ackley is not a calibration problem" in result.output
    assert not (tmp_path / "o").exists()


def test_calibrate_refuses_a_bad_sample_count_before_any_evaluation(tmp_path):
    out = tmp_path / "o"
    result = runner.invoke(app, ["calibrate", write_case(tmp_path), "--quiet", "--output", str(out), "--samples", "0"])
    assert result.exit_code == 2 and "--samples: expected an integer in [1, 1000000], got 0" in result.output
    assert not (out / "evaluations.jsonl").exists()


def test_the_guide_python_example_calibrates_its_spring(tmp_path):
    """The calibration guide's problem file, as written, on data made from known parameters."""
    import re

    from tests.survival import ROOT

    text = (ROOT / "docs" / "guide" / "calibration.md").read_text()
    code = re.search(r"```python\n(# problems/spring.py.*?)```", text, re.S).group(1)
    (tmp_path / "spring.py").write_text(code)
    t = np.linspace(0, 5, 30)
    k, c = 3.0, 0.4
    clean = np.exp(-c * t / 2) * np.cos(np.sqrt(k - c**2 / 4) * t)
    np.savetxt(tmp_path / "measured.csv", clean + 0.01 * np.random.default_rng(0).standard_normal(30), delimiter=",")
    case = tmp_path / "spring.yaml"
    case.write_text("name: spring\nproblem: spring.py:spring\nmethod: gp-ucb+\nbudget: 40\ninitial_points: 6\nseed: 0\n")
    out = tmp_path / "out"
    result = runner.invoke(app, ["calibrate", str(case), "--quiet", "--output", str(out), "--samples", "1000"])
    assert result.exit_code == 0, result.output
    posterior = json.loads((out / "calibration" / "posterior.json").read_text())
    assert (out / "calibration" / "pairs.png").is_file()
    for name, truth in (("k", k), ("c", c)):
        low, high = posterior["parameters"][name]["interval_95"]
        assert low <= truth <= high, (name, low, high)
