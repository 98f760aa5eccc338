"""Post-run monitors: the parasitic period-2 ("sawtooth") mode of two-step schemes.

The GNI family (reflection schemes, Ferraro–Iglesias–Martín de Diego 2008 and 2015) is a
time-symmetric two-step map on Q×Q (dimension 2n) for dynamics on D (dimension 2n − m): the m
"Q-momentum" directions carry a parasitic component that flips sign every step. Where the motion
is attracting (the Chaplygin sleigh once it moves forward) that component follows the
time-reversed, *repelling* linearisation and grows — by k ≈ 300 the discrete sleigh of the
paper's Example 3 runs backwards with errors of 16–65 — while the energy stays within 1e-3, so
energy monitoring does not see it (our analysis of Example 3: docs/theory/ferraro2008.md).

Indicator (:func:`sawtooth_indicator`). The one-sided step velocity u_k = (q_{k+1} − q_k)/h (on
SO(3): vee(log(R_kᵀR_{k+1}))/h) is passed through the binomial high-pass

    a_k = |u_{k−2} − 4u_{k−1} + 6u_k − 4u_{k+1} + u_{k+2}| / 16,

which returns the amplitude of a component (−1)^k A exactly and damps a smooth signal by
(ω h)⁴/16 (ω its frequency); a_k is divided by the node speed |v_k| (floored at 1e-3 of its
median). This is the alternating part of the lateral velocity (our analysis,
docs/theory/ferraro2008.md#parasitic-mode; the alternating part is lateral: the node velocity
satisfies the constraint). An alternative, |r_{k−1} − 2r_k + r_{k+1}|/4 with
r_k = μ(q_k)M⁻¹p⁻_k, needs the system; it sees the same mode.

:func:`detect_parasitic_mode` finds the first node where the relative amplitude exceeds
``threshold`` (default 1e-2) and, going back, the step from which it stayed above
``threshold·onset_fraction`` (the onset), and fits the growth rate per step on that window. Only a
*growing* sawtooth counts: one that is above threshold·onset_fraction from the first node on (a
start-up transient, e.g. the Legendre start-up's period-2 multiplier) or whose fitted rate is ≤ 0
is not reported.
:func:`post_run_checks` runs it after :func:`dalembert.integrate` for the GNI families and warns
with :class:`ParasiticModeWarning`.
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import jax.numpy as jnp
import numpy as np

from .solvers import newton_module as newton_mod
from .methods.base import Scheme, observation_dict, registry

#: default relative amplitude of the alternating component that triggers the warning
THRESHOLD = 1e-2
#: the onset is where the relative amplitude last rose above THRESHOLD·ONSET_FRACTION
ONSET_FRACTION = 0.1
#: name of the node array of the in-loop statistic
AMPLITUDE = "sawtooth_amplitude"

_HIGHPASS = np.array([1.0, -4.0, 6.0, -4.0, 1.0]) / 16.0


class ParasiticModeWarning(RuntimeWarning):
    """A growing period-2 (sawtooth) component was found in a trajectory of a two-step scheme."""


@dataclass
class SawtoothReport:
    """Result of :func:`detect_parasitic_mode`.

    detected : the relative alternating amplitude exceeded the threshold.
    step : first step where it did (node index × save_every; None if not detected).
    onset : step from which it stayed above threshold·onset_fraction (None if not detected).
    growth_rate : least-squares slope of log(amplitude) per step on [onset, step] (None if the
        window has < 3 points or nothing was detected).
    max_relative_amplitude : max over the run of the relative amplitude.
    relative_amplitude : (N+1,) the indicator at the nodes (NaN where undefined: the first two and
        last three nodes).
    threshold : the threshold used.
    """

    detected: bool
    step: int | None
    onset: int | None
    growth_rate: float | None
    max_relative_amplitude: float
    relative_amplitude: np.ndarray
    threshold: float

    def message(self, h: float | None = None) -> str:
        if not self.detected:
            return f"no parasitic period-2 mode (max relative amplitude {self.max_relative_amplitude:.2e})"
        t = "" if h is None else f" (t = {self.step * h:.6g})"
        rate = "" if self.growth_rate is None else f", growing ×e^{self.growth_rate:.3g} per step"
        return (f"parasitic period-2 (sawtooth) mode: relative amplitude {self.threshold:g} exceeded at step "
                f"{self.step}{t}; it started at about step {self.onset}{rate}. The reflection scheme is "
                f"unstable in this (attracting) regime; energy does not show it (see "
                f"dalembert.monitors; use a one-step method — nh-rattle-sym, nh-rattle-4, a discrete gradient — or a smaller h)")


def _log_so3(R):
    """vee(log R) for R (N, 3, 3), NumPy (angles < π)."""
    tr = np.clip((np.trace(R, axis1=1, axis2=2) - 1.0) / 2.0, -1.0, 1.0)
    th = np.arccos(tr)
    v = np.stack([R[:, 2, 1] - R[:, 1, 2], R[:, 0, 2] - R[:, 2, 0], R[:, 1, 0] - R[:, 0, 1]], axis=1)
    s = np.sin(th)
    f = np.where(th < 1e-6, 0.5 + th ** 2 / 12.0, th / (2.0 * np.where(s == 0, 1.0, s)))
    return f[:, None] * v


def step_velocity(traj=None, *, q=None, R=None, h):
    """One-sided step velocities u_k (N, d): (q_{k+1} − q_k)/h, or vee(log(R_kᵀR_{k+1}))/h."""
    if traj is not None:
        q = traj.q
        R = traj.extra.get("R") if q is None else None
    if q is not None:
        q = np.asarray(q, float)
        return np.diff(q.reshape(q.shape[0], -1), axis=0) / h
    R = np.asarray(R, float)
    return _log_so3(np.einsum("kji,kjl->kil", R[:-1], R[1:])) / h


def sawtooth_indicator(u, speed):
    """Relative amplitude of the period-2 component of u (N, d), at the nodes (N+1,).

    a_k = |Σ_i c_i u_{k−2+i}| / max(|v_k|, 1e-3·median|v|), c = (1, −4, 6, −4, 1)/16 (module doc);
    NaN where the stencil does not fit.
    """
    u = np.asarray(u, float)
    N = u.shape[0]
    out = np.full(N + 1, np.nan)
    if N < 5:
        return out
    filt = sum(c * u[i:N - 4 + i] for i, c in enumerate(_HIGHPASS))
    amp = np.linalg.norm(filt, axis=1)
    speed = np.linalg.norm(np.asarray(speed, float).reshape(len(speed), -1), axis=1)
    floor = max(1e-3 * float(np.median(speed)), np.finfo(float).tiny)
    out[2:N - 2] = amp / np.maximum(speed[2:N - 2], floor)
    return out


# ---------------------------------------------------------------------------------------------
# the in-loop statistic: every step, whatever save_every
# ---------------------------------------------------------------------------------------------

class SawtoothState(NamedTuple):
    """The state of a monitored scheme: the method's own state and the last step velocities.

    inner : the method's state.  x : the configuration after the last step (q, or R on SO(3)).
    u : (4, d) the last four step velocities, newest first.  amp : |Σ c_i u_{k−4+i}| (the
    binomial high-pass of the module doc) at the last step; −1 until five steps were taken.
    n : steps taken (capped at 4).  vmax : the largest |u| so far (the scale of the stop test).
    """

    inner: Any
    x: Any
    u: Any
    amp: Any
    n: Any
    vmax: Any


@dataclass(frozen=True)
class MonitoredScheme(Scheme):
    """A :class:`~dalembert.methods.base.Scheme` whose state also carries the period-2 statistic
    (:func:`with_sawtooth`); ``wrap(inner_state, h)`` makes its state from a method state."""

    wrap: Callable = None


def _configuration(obs):
    d = observation_dict(obs)
    return d.get("q") if d.get("q") is not None else d.get("R")


def _step_velocity(x0, x1, h, group=None):
    if x1.ndim == 2:
        if group is not None and group.name != "SO(3)":  # another matrix group: cay⁻¹(g_k⁻¹ g_{k+1}) / h
            return group.cayley_inv(group.inverse(x0) @ x1) / h
        from .lie import so3                            # SO(3): vee(log(R_kᵀ R_{k+1})) / h
        return so3.log(so3.matmul(so3.transpose(x0), x1)) / h
    return jnp.ravel(x1 - x0) / h


class WindowState(NamedTuple):
    """The state of a scheme monitored lazily (:func:`with_sawtooth` without ``stop``): the
    method's own state and the last configurations, from which the node computes the statistic.

    inner : the method's state.  xs : (6, ...) the configurations x_k, x_{k−1}, …, x_{k−5}
    (q, or R on SO(3)), newest first.  n : steps taken (capped at 5)."""

    inner: Any
    xs: Any
    n: Any


def _highpass(u):
    """|Σ c_i u_{k−4+i}| of five step velocities u (5, d), newest first (the module doc's
    binomial high-pass), elementwise: a dot in the loop body keeps XLA from compiling the loop
    into one kernel (engine.xla), which cost more than the explicit step itself."""
    high = jnp.sum(jnp.asarray(_HIGHPASS)[:, None] * u, axis=0)
    return jnp.sqrt(jnp.sum(high * high))


def with_sawtooth(scheme: Scheme, stop: float | None = None, group=None) -> Scheme:
    """``scheme`` with the period-2 statistic of every step in its state and its node outputs.

    After each step the one-sided step velocity u_k = (q_{k+1} − q_k)/h (on SO(3):
    vee(log(R_kᵀR_{k+1}))/h) enters the binomial high-pass of the module doc,
    a_k = |u_{k−4} − 4u_{k−3} + 6u_{k−2} − 4u_{k−1} + u_k| / 16, which returns the amplitude A of
    a component (−1)^k A and damps a smooth one by (ωh)⁴/16. Its value at the last step is the
    node array ``sawtooth_amplitude`` (−1 before the fifth step): computed from consecutive
    steps, so a period-2 mode is seen whatever ``save_every`` is (an even stride hid it from the
    node-based detector). The method's own state evolves exactly as without the monitor. The
    node must have q or R (:func:`has_configuration`).

    Without ``stop`` the state carries the last six configurations (a copy per step) and the node
    computes a_k from them (:class:`WindowState`): the same value, at a fraction of the cost of
    computing it at every step (docs/benchmarks.md, "Measurements behind the code").

    ``stop``: a relative amplitude (e.g. :data:`THRESHOLD`) above which the step fails, with
    cause :data:`~dalembert.solvers.newton.PARASITIC`: a_k > stop · max(|u_k|, 10⁻³ · max_j |u_j|)
    (the floor keeps a turning point, where |u_k| passes near zero, from counting). The statistic
    is then computed at every step (:class:`SawtoothState`).

    ``group``: the system's matrix Lie group when its configuration R is not in SO(3) (the step
    velocity is then cay⁻¹(R_k⁻¹R_{k+1})/h)."""
    if stop is None:
        return _windowed(scheme, group)

    def wrap(inner, h):
        if isinstance(inner, SawtoothState):
            return inner
        x = _configuration(scheme.observe(inner, h))
        d = _step_velocity(x, x, 1.0, group).shape[0]
        zero = jnp.asarray(0.0, x.dtype)
        return SawtoothState(inner, x, jnp.zeros((4, d), x.dtype), zero - 1.0, jnp.asarray(0, jnp.int32), zero)

    def init(*args):
        return wrap(scheme.init(*args), args[-1])

    def step(st, h):
        new, info = scheme.step(st.inner, h)
        x = _configuration(scheme.observe(new, h))
        u = _step_velocity(st.x, x, h, group)
        window = jnp.concatenate([u[None], st.u], axis=0)            # u_k, u_{k−1}, ..., u_{k−4}
        amp = jnp.where(st.n >= 4, _highpass(window), -1.0)
        speed = jnp.sqrt(jnp.sum(u * u))
        vmax = jnp.maximum(st.vmax, speed)
        grown = amp > stop * jnp.maximum(speed, 1e-3 * vmax)
        info = info._replace(converged=info.converged & ~grown,
                             cause=jnp.where(grown, newton_mod.PARASITIC,
                                             newton_mod.CONVERGED if info.cause is None else info.cause))
        return SawtoothState(new, x, window[:4], amp.astype(st.amp.dtype), jnp.minimum(st.n + 1, 4),
                             vmax.astype(st.vmax.dtype)), info

    def observe(st, h):
        d = observation_dict(scheme.observe(st.inner, h))
        d[AMPLITUDE] = st.amp
        return d

    return MonitoredScheme(init=init, step=step, observe=observe, wrap=wrap)


def _windowed(scheme: Scheme, group=None) -> Scheme:
    """:func:`with_sawtooth` without a stop: the last six configurations in the state, the
    statistic computed by the node (:class:`WindowState`)."""
    def wrap(inner, h):
        if isinstance(inner, WindowState):
            return inner
        x = _configuration(scheme.observe(inner, h))
        return WindowState(inner, jnp.broadcast_to(x, (6,) + x.shape), jnp.asarray(0, jnp.int32))

    def init(*args):
        return wrap(scheme.init(*args), args[-1])

    def step(st, h):
        new, info = scheme.step(st.inner, h)
        x = _configuration(scheme.observe(new, h))
        return WindowState(new, jnp.concatenate([x[None], st.xs[:5]], axis=0), jnp.minimum(st.n + 1, 5)), info

    def observe(st, h):
        d = observation_dict(scheme.observe(st.inner, h))
        u = jnp.stack([_step_velocity(st.xs[i + 1], st.xs[i], h, group) for i in range(5)])
        d[AMPLITUDE] = jnp.where(st.n >= 5, _highpass(u), -1.0).astype(st.xs.dtype)
        return d

    return MonitoredScheme(init=init, step=step, observe=observe, wrap=wrap)


def has_configuration(obs_shapes) -> bool:
    """Whether a node (its observation, or the shapes of it) has q or R."""
    return _configuration(obs_shapes) is not None


def monitored_methods() -> list:
    """Names of the registered methods with the in-loop statistic (:func:`monitored`)."""
    return [name for name, m in registry().items() if monitored(m)]


def monitored(method) -> bool:
    """Whether ``method`` carries the in-loop period-2 statistic: a two-step method
    (``traits.two_step``)."""
    return bool(getattr(getattr(method, "traits", None), "two_step", False))


def detect_parasitic_mode(traj=None, *, q=None, R=None, speed=None, h=None, threshold: float = THRESHOLD,
                          onset_fraction: float = ONSET_FRACTION) -> SawtoothReport:
    """Look for a growing period-2 component in a trajectory (module doc).

    Parameters
    ----------
    traj : a Trajectory with q (N+1, n) and v, or with extra R (N+1, 3, 3) and omega; or give
        q / R, speed (N+1, ...) and h directly. A trajectory of a monitored method carries the
        in-loop statistic ``sawtooth_amplitude`` (:func:`with_sawtooth`), which is used then,
        whatever its ``save_every``. Otherwise the statistic is computed from the nodes, which
        must be consecutive steps or an odd stride (an even ``save_every`` aliases the mode
        away; the result is then "not detected").
    threshold : relative amplitude that counts as detected.
    onset_fraction : the onset is where the amplitude last rose above threshold·onset_fraction.

    Returns
    -------
    SawtoothReport
    """
    stride = 1
    if traj is not None and AMPLITUDE in traj.extra and speed_of(traj) is not None:
        # the in-loop statistic (every step): whatever save_every, and a last partial node is
        # a node like the others
        stride = int((traj.metadata or {}).get("save_every", 1))
        amp = np.asarray(traj.extra[AMPLITUDE], float)
        speed = np.linalg.norm(np.asarray(speed_of(traj), float).reshape(len(amp), -1), axis=1)
        floor = max(1e-3 * float(np.median(speed)), np.finfo(float).tiny)
        rel = np.where(amp >= 0, amp / np.maximum(speed, floor), np.nan)
        return _report(rel, speed, stride, threshold, onset_fraction)
    if traj is not None:
        md = traj.metadata or {}
        h = md.get("h", None) if h is None else h
        stride = int(md.get("save_every", 1))
        h = (h or float(traj.t[1] - traj.t[0])) * stride
        speed = speed_of(traj)
        n = len(traj.t)
        if stride % 2 == 0 or speed is None:
            return SawtoothReport(False, None, None, None, 0.0, np.full(n, np.nan), threshold)
        # a last partial node (t_final not a multiple of h·save_every) breaks the uniform stride
        last = n - 1 if n >= 2 and not np.isclose(traj.t[-1] - traj.t[-2], h, rtol=1e-9) else n
        q = None if traj.q is None else traj.q[:last]
        R = None if q is not None else traj.extra.get("R")[:last]
        speed = speed[:last]
    else:
        n = len(speed)
    u = step_velocity(q=q, R=R, h=h)
    rel = np.concatenate([sawtooth_indicator(u, speed), np.full(n - len(speed), np.nan)])
    return _report(rel, speed, stride, threshold, onset_fraction)


def speed_of(traj):
    """The node speeds a sawtooth is measured against: v, or omega on SO(3) (None if neither)."""
    return traj.v if traj.q is not None else traj.extra.get("omega")


def _report(rel, speed, stride, threshold, onset_fraction) -> SawtoothReport:
    """The report of a relative-amplitude series ``rel`` at the nodes (``stride`` steps apart)."""
    finite = np.isfinite(rel)
    mx = float(np.max(rel[finite])) if finite.any() else 0.0
    over = np.nonzero(finite & (rel > threshold))[0]
    if over.size == 0:
        return SawtoothReport(False, None, None, None, mx, rel, threshold)
    k = int(over[0])
    low = np.nonzero(finite[:k] & (rel[:k] <= threshold * onset_fraction))[0]
    if low.size == 0:
        # above threshold·onset_fraction from the first node on: a start-up sawtooth (e.g. the
        # Legendre start-up's period-2 multiplier), not one that grew out of a quiet run
        return SawtoothReport(False, None, None, None, mx, rel, threshold)
    onset = int(low[-1]) + 1
    rate = None
    if k - onset >= 2:
        kk = np.arange(onset, k + 1)
        sp = np.linalg.norm(np.asarray(speed, float).reshape(len(speed), -1), axis=1)
        amp = rel[kk] * np.maximum(sp[kk], 1e-300)
        rate = float(np.polyfit(kk, np.log(amp), 1)[0]) / stride
        if rate <= 0:
            return SawtoothReport(False, None, None, None, mx, rel, threshold)
    return SawtoothReport(True, k * stride, onset * stride, rate, mx, rel, threshold)


#: Most nodes the post-run check reads (:func:`post_run_checks`).
MAX_CHECK_NODES = 1 << 19


def record_warning(metadata: dict, category: type, message: str) -> None:
    """Keep a warning a run issued in its metadata (``metadata["warnings"]``: a list of
    ``{"category": name, "message": text}``), so that it is in the saved trajectory, the run's
    ``summary.json`` and the report, not only on the terminal."""
    entry = {"category": category.__name__, "message": " ".join(str(message).split())}
    if entry not in metadata.setdefault("warnings", []):
        metadata["warnings"].append(entry)


def post_run_checks(traj, method) -> None:
    """Checks run by :func:`dalembert.integrate` after a run: for a two-step method
    (``traits.two_step``) a :class:`ParasiticModeWarning` if :func:`detect_parasitic_mode`
    finds a growing sawtooth (the report is also stored in ``traj.metadata['parasitic_mode']``, the
    warning in ``traj.metadata['warnings']``).
    Never raises: a monitor must not fail a finished run. A run of more than
    :data:`MAX_CHECK_NODES` nodes (a streamed one) is checked on every k-th node
    (:meth:`~dalembert.Trajectory.thinned`; the in-loop statistic sees every step, so the
    thinning coarsens the onset, it does not hide the mode)."""
    try:
        if not monitored(method) or len(traj.t) < 8:
            return
        md = traj.metadata
        if len(traj) > MAX_CHECK_NODES:         # only what the detector reads
            traj = traj.thinned(MAX_CHECK_NODES, fields=(AMPLITUDE, "q", "v", "R", "omega"))
        rep = detect_parasitic_mode(traj)
        if rep.detected:
            md["parasitic_mode"] = {"step": rep.step, "onset": rep.onset,
                                               "growth_rate": rep.growth_rate,
                                               "max_relative_amplitude": rep.max_relative_amplitude}
            h = float(traj.metadata.get("h", traj.t[1] - traj.t[0]))
            message = f"{traj.metadata.get('method', '')}: " + rep.message(h)
            record_warning(md, ParasiticModeWarning, message)
            warnings.warn(message, ParasiticModeWarning,
                          stacklevel=4)  # post_run_checks ← _integrate_compiled ← integrate ← caller
    except Exception:  # noqa: BLE001 - a monitor never fails a run
        return


def failure_note(traj, method) -> str:
    """For a run of a two-step method that failed: :func:`post_run_checks` on the nodes computed
    before the failure (so its :class:`ParasiticModeWarning` comes with the error), and a sentence
    for the error's message when a growing sawtooth was found — the step where it crossed the
    threshold and its onset, so that a failure it caused is not read as a step-size problem.
    "" otherwise (never raises)."""
    try:
        post_run_checks(traj, method)
        rep = traj.metadata.get("parasitic_mode")
        if not rep:
            return ""
        return (f" A parasitic period-2 mode was growing before the failure (relative amplitude above "
                f"{THRESHOLD:g} from step {rep['step']}, onset at step {rep['onset']}).")
    except Exception:  # noqa: BLE001 - a monitor never fails a run
        return ""
