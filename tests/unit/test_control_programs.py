"""A run's (N, c) control array is an argument of the compiled programs: a new array of the same
shape reuses them (model-predictive control calls ``dl.integrate(..., controls=U)`` with a new U
at every iteration), on every system kind that takes controls, with the results of the same
array run through ``dl.solve`` (which traces the array as a constant of its own program)."""
import jax.numpy as jnp
import numpy as np
import pytest

import dalembert as dl
from test_dg_forces import X0 as PENDULUM_X0, _pendulum
from test_forces import CAR
from test_lie_forces import CONTROLLED as LIE_CONTROLLED, CONTROLLED_EPS, R0 as SUSLOV_R0, W0 as SUSLOV_W0
from test_reduced_forces import CONTROLLED as BALL_CONTROLLED, STATE as BALL_STATE

N, H = 12, 0.05


def _pushed_pendulum():
    return _pendulum(force=lambda x, t, u: jnp.array([0.0, u[0] + 0.5 * u[1]]))


# (system, method, initial state by name, in the order dl.solve takes it)
CASES = {
    "NonholonomicSystem": (lambda: CAR, "nh-rattle-sym", dict(q0=np.zeros(3), v0=np.zeros(3))),
    "AlmostPoissonSystem": (_pushed_pendulum, "dg-avf", dict(x0=PENDULUM_X0)),
    "EulerPoincareSuslovSystem": (lambda: CONTROLLED_EPS, "dreps-rk4", dict(R0=SUSLOV_R0, omega0=SUSLOV_W0)),
    "LieNonholonomicSystem": (lambda: LIE_CONTROLLED, "lie-gni-mv-sym", dict(R0=SUSLOV_R0, omega0=SUSLOV_W0)),
    "ReducedSystem": (lambda: BALL_CONTROLLED, "reduced-gni",
                      {k: BALL_STATE[k] for k in ("x0", "R0", "xdot0", "xi0")}),
}


def _controls(seed):
    rng = np.random.default_rng(seed)
    return 0.5 * rng.standard_normal((N, 2))


#: in CI the two cheapest (an implicit and an explicit method, 6 s CPU together); the others
#: (3 to 10 s CPU each) in the full suite
FULL = ("AlmostPoissonSystem", "LieNonholonomicSystem", "ReducedSystem")


@pytest.mark.parametrize("kind", [pytest.param(k, marks=pytest.mark.full) if k in FULL else k for k in sorted(CASES)])
def test_a_new_control_array_reuses_the_compiled_programs(kind, compile_counter):
    """Second call with another U of the same shape: 0 programs compiled (before the array was an
    argument: 2, the start and chunk programs, again); its nodes equal dl.solve's with that U to
    1e-12 relative (measured: equal bit for bit on the car); two arrays give nodes 1e-3 apart (the
    negative control: a program that ignored its argument would give the first array's)."""
    make, method, state = CASES[kind]
    system = make()
    kw = dict(h=H, t_final=N * H, progress=False, **state)
    first = dl.integrate(system, method, controls=_controls(1), **kw)
    assert compile_counter[0] > 0
    compile_counter[0] = 0
    U = _controls(2)
    second = dl.integrate(system, method, controls=U, **kw)
    assert compile_counter[0] == 0, f"{compile_counter[0]} programs compiled for a new array"
    out = dl.solve(system, method, tuple(state.values()), H, N, controls=U)
    names = [k for k in out if np.ndim(out[k]) >= 2 and np.size(out[k]) and getattr(second, k, None) is not None]
    assert names
    for name in names:
        ref = np.asarray(out[name])
        assert np.max(np.abs(getattr(second, name) - ref)) <= 1e-12 * max(1.0, np.max(np.abs(ref))), name
    assert max(np.max(np.abs(getattr(second, k) - getattr(first, k))) for k in names) > 1e-3


def test_a_checkpoint_is_not_continued_with_other_controls(tmp_path):
    """The checkpoint of a run (kept after it completes) is refused for a run with controls that
    differ in one row after the first (the system's fingerprint sees every row, not only the row
    its probes at k = 0 read; before, such a run continued the other run's checkpoint), and
    continued with the same controls (the same nodes)."""
    path = tmp_path / "run.npz"
    kw = dict(q0=np.zeros(3), v0=np.zeros(3), h=H, t_final=N * H, progress=False, checkpoint=path,
              keep_checkpoint=True, checkpoint_every=0.0)
    U = _controls(3)
    done = dl.integrate(CAR, "nh-rattle-sym", controls=U, **kw)
    again = dl.integrate(CAR, "nh-rattle-sym", controls=U.copy(), **kw)
    assert np.array_equal(again.q, done.q)
    other = U.copy()
    other[N // 2] += 1.0
    with pytest.raises(dl.InputError, match="another run's checkpoint"):
        dl.integrate(CAR, "nh-rattle-sym", controls=other, **kw)


def test_the_programs_of_the_controls_go_with_the_system():
    """The system the programs are compiled for is kept by the user's system, not in a cache keyed
    by it (its functions close over the user's system: such an entry would keep it for ever):
    after two runs with control arrays, deleting the system frees it and its cached programs."""
    import gc
    import weakref

    from dalembert._cache import cache_size
    system = dl.NonholonomicSystem(mass_matrix=jnp.eye(3), name="pushed",
                                   constraint_matrix=lambda q: jnp.array([[-jnp.sin(q[2]), jnp.cos(q[2]), 0.0]]), force=lambda q, v, t, u: jnp.array([u[0], u[1], 0.0]))
    before = cache_size()
    for seed in (4, 5):
        dl.integrate(system, "nh-rattle", q0=np.zeros(3), v0=np.zeros(3), h=H, t_final=N * H, progress=False,
                     controls=_controls(seed))
    alive = weakref.ref(system)
    del system
    gc.collect()
    assert alive() is None and cache_size() <= before
