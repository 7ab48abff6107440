"""benchmarks/evidence_cost.py times the evidence with the fused kernels and with the tensor code,
and reports whether the two evidences agree bit for bit and how far their gradients are apart; the
tensor code is restored after each timing."""

from __future__ import annotations

import importlib.util
from pathlib import Path

from pinnbo.models import se_fused

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("evidence_cost", ROOT / "benchmarks" / "evidence_cost.py")
evidence_cost = importlib.util.module_from_spec(spec)
spec.loader.exec_module(evidence_cost)


def test_a_row_times_both_codes_and_finds_them_equal(monkeypatch, capsys):
    usable = se_fused.usable
    monkeypatch.setattr("sys.argv", ["evidence_cost.py", str(ROOT / "cases" / "helmholtz.yaml"), "--t", "12",
                                     "--repeats", "1"])
    evidence_cost.main()
    header, rule, row = capsys.readouterr().out.strip().splitlines()
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[:3] == ["helmholtz", "12", "128"]
    assert float(cells[3]) > 0 and float(cells[4]) > 0
    assert cells[6] == "yes"
    assert float(cells[7]) < 1e-8       # nats per unit; the fit stops at changes of 10⁻⁶
    assert se_fused.usable is usable
