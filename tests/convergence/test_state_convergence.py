"""``dl.convergence`` / ``dalembert convergence`` for a model whose state is not (q, v): the Suslov
problem (state R, ω) against its exact solution (suslov-2015 spec §1.6). Orders: ω second order for
eps-midpoint (S2, E4); R first order with the paper's left-endpoint reconstruction (Thm 5.2(2), E16)
and second order for the Lie-group GNI (R_{k+1} = R_k W_k)."""
import json

import numpy as np
import pytest

import dalembert as dl
from dalembert.cli import main
from dalembert.errors import InputError

HS = [0.1, 0.05, 0.025]


def test_suslov_orders_against_the_exact_solution():
    res = dl.convergence(dl.models.get("suslov"), ["eps-midpoint", "lie-gni-mv"], HS, t_final=5.0)
    assert res.labels == ("R", "omega")
    assert res.reference == "exact solution"
    assert abs(res.orders_v["eps-midpoint"] - 2.0) < 0.1
    assert abs(res.orders_q["eps-midpoint"] - 2.0) < 0.1     # R by the midpoint reconstruction (default)
    assert abs(res.orders_q["lie-gni-mv"] - 2.0) < 0.1
    assert abs(res.orders_v["lie-gni-mv"] - 2.0) < 0.1
    assert np.all(res.errors_q["eps-midpoint"] > 1e-6)      # a real error, not a self-comparison


def test_other_initial_state_and_bad_names():
    model = dl.models.get("suslov")
    w0 = np.array([-0.3, 0.7, 0.0])
    res = dl.convergence(model, ["eps-midpoint"], HS, t_final=2.0, initial_state={"omega0": w0})
    assert abs(res.orders_v["eps-midpoint"] - 2.0) < 0.1
    with pytest.raises(InputError, match="unknown initial-state names"):
        dl.convergence(model, ["eps-midpoint"], HS, t_final=1.0, initial_state={"w0": w0})


def test_cli_convergence_suslov(tmp_path, capsys):
    out = tmp_path / "conv"
    with pytest.raises(SystemExit) as exc:
        main(["convergence", "suslov", "--h", "0.1,0.05", "--t-final", "2", "--out", str(out)])
    assert exc.value.code == 0
    text = capsys.readouterr().out
    assert "order R" in text and "order omega" in text
    data = json.loads((out / "convergence.json").read_text())
    assert data["labels"] == ["R", "omega"]
    assert list(data["orders_v"]) == ["eps-midpoint"]          # the model's default method
    assert abs(data["orders_v"]["eps-midpoint"] - 2.0) < 0.1
    assert (out / "convergence.png").stat().st_size > 0
