"""benchmarks/acquisition_gradient_cost.py times pde-gp's acquisition with the PDE block's gradient
in closed form and by autograd, and reports whether the values agree bit for bit and how far the
gradients are apart; the closed form is restored after each timing."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from pinnbo.models import pde_gp

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("acquisition_gradient_cost",
                                              ROOT / "benchmarks" / "acquisition_gradient_cost.py")
acquisition_gradient_cost = importlib.util.module_from_spec(spec)
spec.loader.exec_module(acquisition_gradient_cost)


def test_a_row_times_both_gradients_and_finds_them_equal(monkeypatch, capsys):
    point_block = pde_gp.point_block
    monkeypatch.setattr("sys.argv", ["acquisition_gradient_cost.py", str(ROOT / "cases" / "helmholtz.yaml"),
                                     "--t", "12", "--repeats", "1"])
    acquisition_gradient_cost.main()
    header, rule, row = capsys.readouterr().out.strip().splitlines()
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:2] == ["helmholtz", "12"]
    assert float(cells[2]) > 0 and float(cells[3]) > 0
    assert cells[5] == "yes"
    assert float(cells[6]) < 1e-9
    assert pde_gp.point_block is point_block
