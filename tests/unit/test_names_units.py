"""Coordinate names and units of a user's NonholonomicSystem: in the metadata, the saved file and
the quick-look plot; without them the generic labels (negative control); wrong lengths refused."""
import jax.numpy as jnp
import matplotlib
import numpy as np
import pytest

import dalembert as dl
from dalembert.errors import InputError

matplotlib.use("Agg")
Q0, V0 = np.array([2.0, 1.0, 0.3]), np.array([np.cos(0.3), np.sin(0.3), 0.8])


def _skate(**kw):
    return dl.NonholonomicSystem(
        mass_matrix=jnp.diag(jnp.array([1.0, 1.0, 0.2])), potential=lambda q: 0.5 * q[0] ** 2,
        constraint_matrix=lambda q: jnp.array([[-jnp.sin(q[2]), jnp.cos(q[2]), 0.0]]), name="skate", **kw)


def _legend(fig):
    return [t.get_text() for t in fig.axes[0].get_legend().get_texts()]


def test_names_and_units_reach_metadata_file_and_plot(tmp_path):
    tr = dl.integrate(_skate(coordinate_names=["x", "y", "θ"], units=["m", "m", "rad"]), "nh-rattle-sym",
                      q0=Q0, v0=V0, h=0.05, t_final=1.0, progress=False)
    assert tr.metadata["coordinate_names"] == ["x", "y", "θ"] and tr.metadata["units"] == ["m", "m", "rad"]
    back = dl.load(tr.save(tmp_path / "run.npz"))
    assert back.metadata["units"] == ["m", "m", "rad"]
    fig = tr.plot()
    assert _legend(fig) == ["x (m)", "y (m)", "θ (rad)"] and fig.axes[0].get_xlabel() == "t (s)"
    plain = dl.integrate(_skate(), "nh-rattle-sym", q0=Q0, v0=V0, h=0.05, t_final=1.0, progress=False)
    assert "units" not in plain.metadata and _legend(plain.plot()) == ["q[0]", "q[1]", "q[2]"]


@pytest.mark.parametrize("kw,match", [({"units": ["m", "m"]}, "units has 2 entries"),
                                      ({"coordinate_names": "xyz"}, "sequence of strings")])
def test_wrong_names_or_units_are_one_line_errors(kw, match):
    with pytest.raises(InputError, match=match):
        dl.integrate(_skate(**kw), "nh-rattle-sym", q0=Q0, v0=V0, h=0.05, t_final=1.0, progress=False)
