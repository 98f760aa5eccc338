"""Models from SymPy mechanics: :func:`from_sympy` turns a mechanical Lagrangian, linear velocity
constraints and configuration constraints written with ``sympy.physics.mechanics`` into a
:class:`~dalembert.systems.NonholonomicSystem` — the metric G(q), the potential V(q), the
constraint covectors μ(q) and, for affine constraints, ν(q) (V and ν may depend explicitly on
the time t), the configuration constraints φ(q) and their Jacobian Φ(q), and the generalized
force f(q, q̇, t) of the loads — compiled by ``sympy.lambdify(..., modules="jax", cse=True)``.
Kane's or Lagrange's solved equations of motion are not used: the integrators need the structure
(L, the constraints and the loads), not the ODE.

    pip install "dalembert[sympy]"

Accepted models: a ``LagrangesMethod`` (its Lagrangian, coordinates, ``hol_coneqs`` and
``nonhol_coneqs``), a ``KanesMethod`` or ``System`` (the bodies' kinetic and potential energies,
the kinematic differential equations, the configuration and velocity constraints), or a
Lagrangian expression with ``coordinates=``, ``constraints=`` and ``holonomic_constraints=``;
with loads (forces on points, torques on frames) read from the model or given as ``loads=``.
Kane models whose kinematics build the rolling in (a contact point with zero velocity and
``v2pt_theory`` from it; wheel rates without angle coordinates) are completed with the missing
coordinates and slip constraints, or refused with a message that says how to rewrite them. See
docs/sympy.md.
"""
from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from .errors import InputError

__all__ = ["from_sympy"]

# relative tolerance of the numerical identity checks at random states (built-in rolling, equal
# slip velocities, axisymmetric wheels, dependent constraint rows); the quantities compared are
# O(1) combinations of the model's lengths and velocities, equal to round-off when the identity holds
_IDENTITY_RTOL = 1e-9


def _sympy():
    try:
        import sympy
        from sympy.physics import mechanics
    except ImportError:                                            # pragma: no cover
        raise InputError("dl.from_sympy needs SymPy: pip install 'dalembert[sympy]'") from None
    return sympy, mechanics


def from_sympy(model: Any = None, *, lagrangian=None, coordinates=None, constraints=(),
               holonomic_constraints=(), potential=None, loads=(), frame=None, controls=(),
               values: dict | None = None, name: str = "sympy-model"):
    """A :class:`~dalembert.systems.NonholonomicSystem` from a SymPy mechanics model.

    Parameters
    ----------
    model : ``sympy.physics.mechanics.LagrangesMethod``, ``KanesMethod`` or ``System``, or None
        (then give ``lagrangian`` and ``coordinates``). From a ``LagrangesMethod``: its Lagrangian,
        ``q``, ``hol_coneqs`` (configuration constraints) and ``nonhol_coneqs``. From a
        ``KanesMethod`` / ``System``: the kinetic energy and ``potential_energy`` of its bodies
        (particles and rigid bodies), its kinematic differential equations (to write the
        generalised speeds u through q̇), its configuration constraints (``configuration_constraints``
        of a KanesMethod, ``holonomic_constraints`` of a System), its velocity constraints and its
        loads (``kanes_equations(bodies, loads)``, ``System.loads`` and its actuators' loads,
        ``LagrangesMethod(forcelist=...)``; see Loads below).
    lagrangian : SymPy expression L(q, q̇) = ½ q̇ᵀG(q)q̇ − V(q) in the ``dynamicsymbols``
        ``coordinates`` and their time derivatives.
    coordinates : sequence of ``dynamicsymbols`` q_1 … q_n.
    constraints : sequence of expressions, each linear in q̇ and = 0 along motions (e.g. the slip
        velocity of a contact point), added to the model's.
    holonomic_constraints : sequence of expressions φ_i(q) = 0 (configuration constraints), added
        to the model's.
    potential : optional expression V(q) (or V(q, t)) added to the model's potential.
    loads : sequence of ``Force``/``Torque`` objects or (point, vector) / (frame, vector) tuples,
        added to the model's loads.
    frame : the inertial ``ReferenceFrame``; needed only for ``loads=`` without a model.
    controls : sequence of c ``dynamicsymbols`` (PyDy's "specified" inputs, e.g. a motor torque
        T(t)) that appear in the loads: the force becomes ``force(q, v, t, u)`` with u (c,) in this
        order, and the signal is given to ``dl.integrate(..., controls=U)`` ((N, c) array or a
        callable t -> (c,); jax.grad with respect to U works).
    values : ``{symbol: number}`` or ``{name: number}`` for the model's constant symbols.
    name : the system's name.

    Returns
    -------
    NonholonomicSystem with mass_matrix (n, n) (kg, kg·m or kg·m² per pair of coordinates),
    potential (J), constraint_matrix (m, n), constraint_rhs (m,) when ν ≠ 0, and with configuration
    constraints holonomic_constraints (k,) and holonomic_jacobian (k, n), all traceable JAX
    functions of q (n,); with loads that are not uniform, force(q, v, t) (n,) (N for lengths, N·m
    for angles). Its attribute ``coordinate_names`` (tuple of n str) names the coordinates:
    the model's q in order, then those a completion added (below).

    Explicit time. V and ν may contain the time t (``dynamicsymbols._t`` or a symbol named t
    without a value): a moving well, a belt driven at u(t). They become ``potential(q, t)`` and
    ``constraint_rhs(q, t)`` (t in s), and the system declares explicit time; the metric, μ and φ
    must not depend on t.

    Built-in rolling (Kane models). A body's mass-centre velocity that is not the time derivative
    of its position from a point with zero velocity (``C.set_vel(N, 0)``; ``P.v2pt_theory(C, N,
    wheel)``: the rolling is built into the kinematics) is completed when the difference — the
    slip velocity of the contact material point — is the same for every body and lies in a
    coordinate plane of the inertial frame (the ground): the contact point's two coordinates in that
    plane (named ``C_x``, ``C_y`` after the point and the axes) are added, the bodies' velocities are
    taken from their positions, and the two slip components become velocity constraints. A
    generalised speed without a kinematic differential equation (a wheel rate with no angle
    coordinate) gets an angle coordinate ``angle_u`` with d(angle)/dt = u when the bodies it turns
    are axisymmetric about its axis. Velocity constraints that the configuration constraints'
    Jacobian (with the other constraints) already implies — the time derivative of φ that Kane's
    method asks for among its velocity constraints — are dropped.

    Loads. A force F at a point P and a torque T on a frame B give the generalized force in the
    coordinates' velocities, Q_i = Σ F·∂v_P/∂q̇_i + Σ T·∂ω_B/∂q̇_i (Kane's generalized active
    forces with the partial velocities taken with respect to q̇; Kane & Levinson, Dynamics: Theory
    and Applications, 1985, §4.4), where v_P and ω_B are the velocities in the inertial frame with
    u written through q̇; F and T may depend on q, q̇ (or u) and explicitly on the time t
    (``dynamicsymbols._t`` or a symbol named t). A uniform load — a force whose components in the
    inertial frame are constant (uniform gravity m g), at a point whose position r_P from a fixed
    point has v_P as its time derivative — becomes the potential −F·r_P instead (so that the
    energy-conserving methods see it and ``traj.energy`` holds it). SymPy's Kane equations read
    the loads, not the bodies' ``potential_energy`` (used by its energy functions), so a model
    often has gravity twice: where a body's ``potential_energy`` and the uniform loads at its mass
    centre differ by a constant (gradients equal at random configurations), they are counted once;
    where they differ otherwise, the model is refused. A LagrangesMethod's Lagrangian and its
    forcelist are both read, as SymPy reads them.

    Raises
    ------
    InputError : SymPy missing; a constraint that is not linear in q̇ (nonlinear velocity
        constraint) or does not contain q̇ (pass it as holonomic_constraints=); a configuration
        constraint with velocities; a Lagrangian that is not mechanical (not quadratic in q̇, or
        with terms linear in q̇); symbols without values (named); explicit time in the metric, in
        the constraints' matrix μ or in a configuration constraint; generalised speeds that the
        kinematic differential equations do not give as linear functions of q̇; a load that is not a Force, Torque or (point | frame, vector)
        tuple, on a point or frame that is not the model's, or with functions of time that are
        not coordinates or controls; a control that no load uses; a body whose potential_energy is
        not its uniform loads' potential; built-in rolling or speeds without coordinates that cannot be
        completed (the message says why and how to rewrite the model); no velocity constraint
        left (a Lagrangian with the rolling substituted in cannot be recovered).

    Source: the discrete mechanics of Ferraro–Jiménez–Martín de Diego 2015 §2–§4 need (G, V, μ);
    configuration constraints as in Marsden & West, Acta Numerica 10 (2001) §3.5; SymPy's
    ``lambdify`` (modules="jax") with ``cse`` (common subexpressions).
    """
    sympy, me = _sympy()
    from sympy.core.function import AppliedUndef
    t = me.dynamicsymbols._t
    parts = _parts(model, lagrangian, coordinates, constraints, holonomic_constraints, loads, frame, sympy, me, t,
                   values or {})
    n = len(parts["coordinates"])
    qsym, vsym = parts["qsym"], parts["vsym"]
    by_symbol = {k: v for k, v in (values or {}).items() if not isinstance(k, str)}
    by_name = {k: v for k, v in (values or {}).items() if isinstance(k, str)}
    known = set(qsym) | set(vsym)
    controls = list(controls)
    usym = sympy.symbols(f"u0:{len(controls)}", real=True) if controls else ()
    to_control = dict(zip(controls, usym))

    def plain(expr, what, time=False, explicit_t=False):
        # time: a load (t and the controls allowed); explicit_t: t allowed (V(q, t), L, constraints;
        # where t may stay — V and ν — is decided by the callers)
        e = sympy.sympify(expr).xreplace(parts["to_plain"])
        if time:                                    # (a load: its controls are symbols u_i)
            e = e.xreplace(to_control)
        # a value given by name matches the symbol of that name, whatever its assumptions; a symbol
        # named t without a value is the time (dynamicsymbols._t or a user's own t)
        e = e.xreplace({**{s: sympy.Float(by_name[s.name]) for s in e.free_symbols if s.name in by_name},
                        **{k: sympy.sympify(v) for k, v in by_symbol.items()}})
        e = e.xreplace({s: t for s in e.free_symbols if s.name == t.name and s != t})
        undef = sorted({str(f) for f in e.atoms(AppliedUndef)} | {str(d) for d in e.atoms(sympy.Derivative)})
        if undef:
            raise InputError(f"dl.from_sympy: the {what} has functions of time that are neither coordinates nor "
                             f"their rates: {', '.join(undef)}; declare them as coordinates (or give the speeds' "
                             f"kinematic differential equations)"
                             + ("; an input of a load (a specified torque T(t)) goes in controls=" if time else ""))
        if e.has(t) and not (time or explicit_t):
            _refuse_time(what, e)
        bad = e.free_symbols - known - ({t, *usym} if time else {t} if explicit_t else set())
        if bad:
            raise InputError(f"dl.from_sympy: symbols without values in the {what}: "
                             f"{', '.join(sorted(map(str, bad)))}; pass values={{symbol: number, ...}}")
        return e

    V = plain(potential, "potential", explicit_t=True) if potential is not None else sympy.Integer(0)
    if V.free_symbols & set(vsym):
        raise InputError("dl.from_sympy: potential must not depend on velocities")
    if "lagrangian" in parts:
        G, V_L = _mechanical(plain(parts["lagrangian"], "Lagrangian", explicit_t=True), qsym, vsym, t, sympy)
        if G.has(t):
            _refuse_time("kinetic energy (metric G = ∂²L/∂q̇²)", G)
        kinetic = None
        V = V + V_L + plain(parts["load_potential"], "potential of the uniform loads")
    else:
        G = None
        kinetic = [(plain(w, "kinetic energy's mass"), plain(J, "kinetic energy"), kind)
                   for w, J, kind in parts["kinetic"]]
        _check_velocities(kinetic, qsym, vsym, sympy)
        V = V + plain(parts["potential"], "potential", explicit_t=True)
        if V.free_symbols & set(vsym):
            raise InputError("dl.from_sympy: the bodies' potential_energy must not depend on velocities")
    phi = [plain(c, "configuration constraint") for c in parts["holonomic"]]
    for i, c in enumerate(phi):
        if c.free_symbols & set(vsym):
            raise InputError(f"dl.from_sympy: configuration constraint {i} ({_short(c)}) involves the "
                             f"velocities; give φ(q) = 0 (a constraint μ(q) q̇ = ν(q) goes in constraints=)")
    mu, nu = _linear_constraints([plain(c, "constraint", explicit_t=True) for c in parts["constraints"]], vsym,
                                 sympy)
    if mu.has(t):
        _refuse_time("constraints' matrix μ (the coefficients of q̇)", mu)
    Phi = sympy.Matrix(phi).jacobian(list(qsym)) if phi else sympy.zeros(0, n)
    keep = _independent_rows(Phi, mu, qsym, sympy)
    mu, nu = mu.extract(keep, list(range(n))) if keep else sympy.zeros(0, n), [nu[i] for i in keep]
    if not 1 <= mu.shape[0] or mu.shape[0] + len(phi) >= n:
        hint = ("; a Lagrangian with the rolling substituted in (velocities from v2pt_theory from a contact "
                "point with zero velocity) is not the free Lagrangian and cannot be recovered: build the model as "
                "a KanesMethod or System with its bodies (dl.from_sympy completes such kinematics), or add the "
                "contact point's coordinates and its slip velocity as nonhol_coneqs"
                if mu.shape[0] == 0 and "lagrangian" in parts else "")
        raise InputError(f"dl.from_sympy: need 1 ≤ m and k + m < n; got m = {mu.shape[0]} velocity constraints "
                         f"and k = {len(phi)} configuration constraints for n = {n} coordinates{hint}")
    Q = [plain(x, "load", time=True) for x in parts["force"]]
    Q = Q if any(x != 0 for x in Q) else None
    unused = [_name(c) for c, u in zip(controls, usym) if Q is None or not any(x.has(u) for x in Q)]
    if unused:
        raise InputError(f"dl.from_sympy: the controls {', '.join(unused)} appear in no load (a force on a point "
                         f"or a torque on a frame that is not a uniform load); remove them from controls= or add "
                         f"the load")
    from .systems import NonholonomicSystem
    if kinetic is None:
        constant_G = not (G.free_symbols & set(qsym))
        mass = jnp.asarray(_constant(G), jnp.float64) if constant_G else _matrix_fn(G, qsym, sympy)
    else:
        mass = _kinetic_fn(kinetic, qsym, n, sympy)
    rhs = _vector_fn(nu, qsym, sympy, t) if any(x != 0 for x in nu) else None
    system = NonholonomicSystem(
        mass_matrix=mass, potential=_scalar_fn(V, qsym, sympy, t), constraint_matrix=_matrix_fn(mu, qsym, sympy),
        constraint_rhs=rhs, name=name,
        holonomic_constraints=_vector_fn(phi, qsym, sympy) if phi else None,
        holonomic_jacobian=_matrix_fn(Phi, qsym, sympy) if phi else None,
        force=_force_fn(Q, qsym, vsym, t, usym, sympy) if Q is not None else None)
    system.coordinate_names = tuple(parts["coordinates"])
    return system


def _parts(model, lagrangian, coordinates, constraints, holonomic, loads, frame, sympy, me, t, values):
    """The model's pieces in its own symbols, with the map to_plain to plain symbols q_i, v_i:
    either ("lagrangian", "load_potential") or ("kinetic", "potential"); "force" (n expressions in
    q, q̇, t: the generalized force of the loads that are not uniform), "constraints", "holonomic",
    "coordinates" (names), "qsym", "vsym"."""
    if model is None:
        if lagrangian is None or coordinates is None:
            raise InputError("dl.from_sympy: give a LagrangesMethod, KanesMethod or System, or "
                             "lagrangian= and coordinates=")
        loads = list(loads)
        if loads and frame is None:
            raise InputError("dl.from_sympy: loads= with a Lagrangian expression needs frame= (the inertial "
                             "ReferenceFrame in which the loads' points and frames move)")
        qs = list(coordinates)
        return {**_symbols(qs, t, sympy), "lagrangian": lagrangian, "constraints": list(constraints),
                "holonomic": list(holonomic), **_lagrange_loads(loads, frame, [], qs, sympy, me, t, values)}
    if isinstance(model, me.LagrangesMethod):
        hol = list(getattr(model, "_hol_coneqs", None) or [])
        qs = list(model.q)
        # LagrangesMethod keeps the time derivatives of hol_coneqs first in coneqs, then the
        # nonholonomic equations as given: read φ itself and the nonholonomic rows
        cons = list(getattr(model, "coneqs", []) or [])[len(hol):] + list(constraints)
        all_loads = list(getattr(model, "forcelist", None) or []) + list(loads)
        lm_frame = getattr(model, "inertial", None) or frame
        if all_loads and lm_frame is None:
            raise InputError("dl.from_sympy: the LagrangesMethod has loads but no frame; build it with frame=N")
        return {**_symbols(qs, t, sympy), "lagrangian": model._L[0], "constraints": cons,
                "holonomic": hol + list(holonomic),
                **_lagrange_loads(all_loads, lm_frame, list(getattr(model, "_bodies", None) or []), qs, sympy, me,
                                  t, values)}
    if isinstance(model, (me.KanesMethod, me.System)):
        return _kane_parts(model, constraints, holonomic, loads, sympy, me, t, values)
    raise InputError(f"dl.from_sympy: unsupported model {type(model).__name__}; give a LagrangesMethod, "
                     f"KanesMethod or System, or lagrangian= and coordinates=")


def _lagrange_loads(loads, frame, bodies, qs, sympy, me, t, values):
    """{"force", "load_potential"} of the loads of a Lagrangian model (q̇ are the velocities)."""
    qdots = [q.diff(t) for q in qs]
    parsed = _parse_loads(loads, me)
    if not parsed:
        return {"force": [sympy.Integer(0)] * len(qs), "load_potential": sympy.Integer(0)}
    num = _Numeric(sympy, t, 6, values)

    def velocity(P, i):
        return _load_velocity(P, frame, i)

    def position(P, v):
        return _honest_position(P, frame, v, {}, num)

    Q, uniform = _load_terms(parsed, frame, qdots, velocity, lambda B, i: _load_angvel(B, frame, i), position,
                             {}, t, sympy)
    return {"force": Q, "load_potential": sum((V for _, V in uniform), sympy.Integer(0))}


def _parse_loads(loads, me):
    """[(kind "force" | "torque", point or frame, vector)] from ``Force``/``Torque`` objects and
    (point, vector) / (frame, vector) tuples; refuses anything else."""
    out = []
    for i, load in enumerate(loads):
        if not (isinstance(load, tuple) and len(load) == 2):
            raise InputError(f"dl.from_sympy: load {i} ({_short(load)}) is not a Force, a Torque or a "
                             f"(point, vector) / (frame, vector) tuple")
        loc, vec = load
        if isinstance(loc, me.Point):
            kind = "force"
        elif isinstance(loc, me.ReferenceFrame):
            kind = "torque"
        else:
            raise InputError(f"dl.from_sympy: load {i} acts on {_short(loc)} ({type(loc).__name__}), neither a "
                             f"Point nor a ReferenceFrame; write Force(body, F) for a force at a body's mass "
                             f"centre or Torque(body, T) for a torque on its frame")
        if not isinstance(vec, me.Vector):
            raise InputError(f"dl.from_sympy: load {i} on {loc} is {_short(vec)} ({type(vec).__name__}), not a "
                             f"Vector; write it with unit vectors of the model's frames (e.g. -m*g*N.z)")
        out.append((kind, loc, vec))
    return out


def _load_velocity(P, frame, i):
    try:
        return P.vel(frame)
    except ValueError:
        raise InputError(f"dl.from_sympy: the point {P} of load {i} has no velocity in {frame}: it is not a "
                         f"point of the model (locate it from the model's points)") from None


def _load_angvel(B, frame, i):
    try:
        return B.ang_vel_in(frame)
    except ValueError:
        raise InputError(f"dl.from_sympy: the frame {B} of load {i} is not oriented relative to {frame}: it is "
                         f"not a frame of the model") from None


def _honest_position(P, frame, v, u_map, num):
    """P's position r from a point with zero velocity in `frame` whose time derivative is P's
    velocity v (numerically, at random states), or None."""
    for Z in _reachable_fixed_points(P, frame):
        r = P.pos_from(Z)
        d = _components(r.dt(frame).xreplace(u_map) - v, frame)
        scale = num.evaluate(_components(v, frame), samples=2)
        if np.max(np.abs(num.evaluate(d, samples=2))) <= _IDENTITY_RTOL * max(1.0, np.max(np.abs(scale))):
            return r
    return None


def _is_constant(exprs, t, sympy):
    """No function of time, no derivative, no t: a constant (in the model's parameters)."""
    from sympy.core.function import AppliedUndef
    return all(not (e.atoms(AppliedUndef) or e.atoms(sympy.Derivative) or e.has(t))
               for e in map(sympy.sympify, exprs))


def _load_terms(parsed, frame, qdots, velocity, angvel, position, u_map, t, sympy):
    """(Q, uniform): the generalized force Q_i = Σ F·∂v_P/∂q̇_i + Σ T·∂ω_B/∂q̇_i (n expressions in
    q, q̇, t) of the loads that are not uniform, and [(point, −F·r_P)] of the uniform ones — a force
    whose components in `frame` are constant (uniform gravity m g) at a point P whose position r_P
    from a fixed point has P's velocity as its time derivative."""
    n = len(qdots)
    Q = [sympy.Integer(0)] * n
    uniform = []
    for i, (kind, loc, vec) in enumerate(parsed):
        vec = vec.xreplace(u_map) if u_map else vec
        if kind == "force":
            v = velocity(loc, i).xreplace(u_map)
            inertial = _components(vec, frame)
            if _is_constant(inertial, t, sympy):
                r = position(loc, v)
                if r is not None:
                    uniform.append((loc, -sum((c * x for c, x in zip(inertial, _components(r, frame))),
                                              sympy.Integer(0))))
                    continue
        else:
            v = angvel(loc, i).xreplace(u_map)
        F = _joint_frame([v, vec], frame, sympy)
        vc, fc = _components(v, F), _components(vec, F)
        J = sympy.Matrix(vc).jacobian(qdots)
        for k in range(n):
            Q[k] += sum((fc[j] * J[j, k] for j in range(3) if J[j, k] != 0 and fc[j] != 0), sympy.Integer(0))
    return Q, uniform


def _joint_frame(vectors, frame, sympy):
    """The frame among those of the vectors' components (and `frame`) in which their components
    have the fewest operations together."""
    best, cost = frame, None
    for F in dict.fromkeys([fr for vec in vectors for _, fr in vec.args] + [frame]):
        try:
            c = sum(sympy.count_ops(vec.to_matrix(F)) for vec in vectors)
        except Exception:                   # noqa: BLE001 (frames not connected)
            continue
        if cost is None or c < cost:
            best, cost = F, c
    return best


def _force_fn(Q, qsym, vsym, t, usym, sympy):
    """force(q (n,), v (n,), t[, u (c,)]) -> (n,) of the loads' generalized force expressions."""
    if usym:
        f = sympy.lambdify([list(qsym), list(vsym), t, list(usym)], Q, modules="jax", cse=True)
        return lambda q, v, t, u: _stack(f(q, v, t, u))
    f = sympy.lambdify([list(qsym), list(vsym), t], Q, modules="jax", cse=True)
    return lambda q, v, t: _stack(f(q, v, t))


def _symbols(qs, t, sympy, speeds=None):
    n = len(qs)
    qsym = sympy.symbols(f"q0:{n}", real=True)
    vsym = sympy.symbols(f"v0:{n}", real=True)
    to_plain = {**{q.diff(t): v for q, v in zip(qs, vsym)}, **dict(zip(qs, qsym)), **(speeds or {})}
    return {"coordinates": [_name(q) for q in qs], "qsym": qsym, "vsym": vsym, "to_plain": to_plain}


def _name(q) -> str:
    return str(getattr(q, "func", q)) if hasattr(q, "args") and getattr(q, "args", ()) else str(q)


def _kane_parts(model, constraints, holonomic, extra_loads, sympy, me, t, values):
    """A KanesMethod or System: the bodies' partial velocities and angular velocities through q̇
    (u from the kinematic differential equations), V from the bodies' potential_energy, the
    configuration and velocity constraints; built-in rolling and speeds without coordinates
    completed (see from_sympy)."""
    is_system = isinstance(model, me.System)
    qs = list(model.q)
    us = list(model.u)
    if is_system:
        frame, bodies = model.frame, list(model.bodies)
        kdes = list(model.kdes)
        vcons = list(model.nonholonomic_constraints)
        hol = list(model.holonomic_constraints)
        loads = list(model.loads) + [load for act in getattr(model, "actuators", ()) for load in act.to_loads()]
    else:
        frame, bodies = model._inertial, list(model.bodies or [])
        qd = [q.diff(t) for q in qs]
        kdes = list(model._k_ku_implicit * sympy.Matrix(us) + model._k_kqdot_implicit * sympy.Matrix(qd)
                    + model._f_k_implicit) if getattr(model, "_qdot_u_map", None) is not None else []
        vcons = list(model._f_nh + model._k_nh * sympy.Matrix(us)) if len(model._k_nh) else []
        hol = list(getattr(model, "_f_h", None) or [])
        loads = list(model.loads or [])
    loads = _parse_loads(loads + list(extra_loads), me)
    if not bodies:
        raise InputError("dl.from_sympy: the model has no bodies to take the kinetic energy from")
    free, u_of_qd = _speeds_through_qdot(kdes, qs, us, t, sympy, me, values)
    # a speed without a kinematic differential equation: the rate of an angle that nothing depends on
    taken = {_name(q) for q in qs}
    angles = [me.dynamicsymbols(_fresh(f"angle_{_name(u)}", taken)) for u in free]
    u_map = {**u_of_qd, **{u: a.diff(t) for u, a in zip(free, angles)}}
    _check_axisymmetric(free, bodies, frame, u_map, sympy, me, t, values)
    contact, slip = _complete_rolling(bodies, frame, u_map, taken, sympy, me, t, values)
    all_q = qs + contact + angles
    syms = _symbols(all_q, t, sympy)
    kinetic = []
    for b in bodies:
        if contact:
            vel = b.masscenter.pos_from(slip["root"]).dt(frame) + slip["cdot"]
        else:
            vel = _velocity(b.masscenter, frame)
        vel = vel.xreplace(u_map)
        kinetic.append((b.mass, _components(vel, _simplest_frame(vel, [frame], sympy)), "translation"))
        if hasattr(b, "central_inertia"):
            inertia = b.central_inertia
            w = b.frame.ang_vel_in(frame).xreplace(u_map)
            frames = [v.args[0][1] for _, u, v in inertia.args] + [frame]
            F = _simplest_frame(w, frames, sympy, inertia)
            kinetic.append((inertia.to_matrix(F), _components(w, F), "rotation"))
    qdots = [q.diff(t) for q in all_q]
    rest = [x for _, c, _ in kinetic for x in c]
    rest = [x for x in (sympy.sympify(e).xreplace(dict.fromkeys(qdots, 0)) for e in rest) if x != 0]
    if rest and np.max(np.abs(_Numeric(sympy, t, 5, values).evaluate(rest))) > 1e-12:
        raise InputError("dl.from_sympy: the bodies' velocities have terms without q̇ (kinematic differential "
                         "equations u = A(q) q̇ + b(q) with b ≠ 0, or moving frames): L would have terms linear in "
                         "q̇, which dalembert's mechanical systems do not model")
    kinetic = [(w, sympy.Matrix(c).jacobian(qdots), kind) for w, c, kind in kinetic]
    num = _Numeric(sympy, t, 6, values)

    def velocity(P, i):
        if not contact:
            return _load_velocity(P, frame, i)
        try:
            return P.pos_from(slip["root"]).dt(frame) + slip["cdot"]
        except ValueError:
            raise InputError(f"dl.from_sympy: the point {P} of load {i} is not located from {slip['root']}: it "
                             f"is not a point of the model (locate it from the model's points)") from None

    def position(P, v):
        if contact:                         # the completed kinematics: r from the contact coordinates
            return P.pos_from(slip["root"]) + slip["cdot"].xreplace({c.diff(t): c for c in contact})
        return _honest_position(P, frame, v, u_map, num)

    Q, uniform = _load_terms(loads, frame, qdots, velocity, lambda B, i: _load_angvel(B, frame, i), position,
                             u_map, t, sympy)
    V = sum((getattr(b, "potential_energy", 0) for b in bodies), sympy.Integer(0))
    V = V + sum((U for _, U in _uniform_not_in_potential(uniform, bodies, all_q, num, sympy)), sympy.Integer(0))
    cons = [sympy.sympify(c).xreplace(u_map) for c in vcons] + slip.get("rows", []) + list(constraints)
    return {**syms, "kinetic": kinetic, "potential": V, "force": Q, "constraints": cons,
            "holonomic": hol + list(holonomic)}


def _uniform_not_in_potential(uniform, bodies, qs, num, sympy):
    """The uniform loads [(point, −F·r)] that a body's ``potential_energy`` does not already hold.
    SymPy's Kane equations read the loads and not ``potential_energy`` (which serves its energy
    functions), so a model often carries gravity twice: as loads and as the bodies' potential
    energy. The uniform loads at a body's mass centre are that body's potential energy when their
    potential and ``potential_energy`` differ by a constant (gradients equal at random
    configurations): then they are counted once; when they differ otherwise, refused."""
    out = list(uniform)
    for b in bodies:
        pe = sympy.sympify(getattr(b, "potential_energy", 0))
        if pe == 0:
            continue
        mine = [(P, U) for P, U in out if P is b.masscenter]
        if not mine:
            continue
        U = sum((u for _, u in mine), sympy.Integer(0))
        grad_U = [sympy.diff(U, q) for q in qs]
        grad_d = [sympy.diff(pe - U, q) for q in qs]
        vals = num.evaluate(grad_d + grad_U, samples=3)
        k = len(qs)
        if np.max(np.abs(vals[:, :k])) > _IDENTITY_RTOL * max(1.0, np.max(np.abs(vals[:, k:]))):
            raise InputError(f"dl.from_sympy: {b.name} has a potential_energy ({_short(pe, 50)}) and uniform loads "
                             f"at its mass centre (gravity) whose potential −F·r differs from it by more than a "
                             f"constant; SymPy's Kane equations use only the loads: make potential_energy the "
                             f"loads' potential or remove one of the two")
        out = [(P, u) for P, u in out if P is not b.masscenter]
    return out


def _simplest_frame(vec, extra, sympy, dyadic=None):
    """The frame among those of vec's components (and `extra`) in which vec (and the dyadic) have
    the fewest operations: |v|² and ωᵀIω do not depend on the frame, the generated code does."""
    best, cost = None, None
    frames = list(dict.fromkeys([fr for _, fr in vec.args] + list(extra)))
    for F in frames:
        try:
            c = sympy.count_ops(vec.to_matrix(F)) + (sympy.count_ops(dyadic.to_matrix(F)) if dyadic else 0)
        except Exception:                   # noqa: BLE001 (frames not connected)
            continue
        if cost is None or c < cost:
            best, cost = F, c
    return best if best is not None else extra[-1]


def _velocity(point, frame):
    try:
        return point.vel(frame)
    except ValueError as e:
        raise InputError(f"dl.from_sympy: the velocity of {point} in {frame} is not defined ({e}); set it "
                         f"(P.set_vel or v2pt_theory)") from None


def _components(vec, F):
    try:
        return list(vec.to_matrix(F))
    except Exception as e:                  # noqa: BLE001 (sympy raises ValueError for unconnected frames)
        raise InputError(f"dl.from_sympy: cannot express {_short(vec)} in frame {F} ({e}); orient the frames "
                         f"relative to one another") from None


def _speeds_through_qdot(kdes, qs, us, t, sympy, me, values=None):
    """(speeds without a kinematic differential equation, {u_i: expression in q, q̇}) from
    kinematic differential equations linear in u."""
    qd = [q.diff(t) for q in qs]
    if not us or set(us) == set(qd):
        return [], {}
    if not kdes:
        raise InputError("dl.from_sympy: the model's generalised speeds u are not q̇ and it has no "
                         "kinematic differential equations; write the model with u = q̇ or give kd_eqs")
    w = sympy.symbols(f"w0:{len(us)}")
    eqs = sympy.Matrix([sympy.sympify(k).xreplace(dict(zip(us, w))) for k in kdes])
    A = eqs.jacobian(w)
    if A.free_symbols & set(w):
        raise InputError("dl.from_sympy: the kinematic differential equations are not linear in the "
                         "generalised speeds u; write the model with u = q̇")
    used = [j for j in range(len(us)) if any(A[i, j] != 0 for i in range(A.shape[0]))]
    free = [us[j] for j in range(len(us)) if j not in used]
    A = A.extract(list(range(A.shape[0])), used)
    b = -eqs.xreplace(dict.fromkeys(w, 0))
    if A.shape[0] != len(used) or not _generically_invertible(A, t, sympy, values):
        raise InputError("dl.from_sympy: the kinematic differential equations do not determine the "
                         "generalised speeds u they contain; write the model with u = q̇")
    if A.is_diagonal() or all(sum(1 for x in A.row(i) if x != 0) == 1 for i in range(A.shape[0])):
        sol = [None] * len(used)                            # one speed per equation: no elimination
        for i in range(A.shape[0]):
            j = next(j for j in range(len(used)) if A[i, j] != 0)
            sol[j] = b[i] / A[i, j]
    else:
        sol = list(A.LUsolve(b))
    return free, {us[j]: s for j, s in zip(used, sol)}


def _generically_invertible(A, t, sympy, values=None) -> bool:
    """A square matrix of expressions in q(t), q̇(t) and constants is invertible at random states."""
    vals = _Numeric(sympy, t, 0, values).evaluate(list(A), samples=2)
    return all(np.linalg.matrix_rank(v.reshape(A.shape)) == A.shape[0] for v in vals)


class _Numeric:
    """Numerical evaluation of expressions in the model's dynamicsymbols at random states, for
    identity checks: constant symbols at their ``values`` (by symbol or by name), the others at
    random positive values of order one."""

    def __init__(self, sympy, t, seed=0, values=None):
        self.sympy, self.t = sympy, t
        self.rng = np.random.default_rng(seed)
        self.values = values or {}

    def _value(self, s, default):
        for key in (s, s.name):
            if key in self.values:
                return float(self.values[key])
        return default

    def evaluate(self, exprs, samples=3):
        sympy, t = self.sympy, self.t
        exprs = [sympy.sympify(e) for e in exprs]
        derivs = sorted(set().union(*[e.atoms(sympy.Derivative) for e in exprs]), key=str)
        dsyms = sympy.symbols(f"_d0:{len(derivs)}")
        exprs = [e.xreplace(dict(zip(derivs, dsyms))) for e in exprs]
        funcs = sorted(set().union(*[e.atoms(sympy.Function) for e in exprs]) - {t}, key=str)
        funcs = [f for f in funcs if f.args == (t,)]
        fsyms = sympy.symbols(f"_f0:{len(funcs)}")
        exprs = [e.xreplace(dict(zip(funcs, fsyms))) for e in exprs]
        # (the time t, where a load has it, takes a random value like a constant)
        consts = sorted(set().union(*[e.free_symbols for e in exprs]) - set(dsyms) - set(fsyms), key=str)
        f = sympy.lambdify([list(dsyms), list(fsyms), list(consts)], exprs, modules="numpy", cse=True)
        cvals = [self._value(c, x) for c, x in zip(consts, self.rng.uniform(0.5, 1.5, len(consts)))]
        out = [np.asarray(f(self.rng.uniform(-1, 1, len(dsyms)), self.rng.uniform(-0.7, 0.7, len(fsyms)), cvals),
                          dtype=float).reshape(len(exprs)) for _ in range(samples)]
        return np.array(out)                                # (samples, len(exprs))


def _check_axisymmetric(free, bodies, frame, u_map, sympy, me, t, values=None):
    """A speed u without a coordinate is completed with an angle only if every body it turns is
    axisymmetric about the axis of u (then nothing depends on the angle)."""
    if not free:
        return
    num = _Numeric(sympy, t, 1, values)
    for u in free:
        turned = []
        for b in bodies:
            if not hasattr(b, "central_inertia"):
                continue
            a = b.frame.ang_vel_in(frame).applyfunc(lambda e: sympy.diff(e, u))
            if not a.args or all(x == 0 for comp, _ in a.args for x in comp):
                continue
            turned.append(b)
            inertia = b.central_inertia
            F = next((fr for comp, fr in a.args if any(x != 0 for x in comp)))
            try:
                M = inertia.to_matrix(F)
            except Exception:               # noqa: BLE001
                M = None
            ax = sympy.Matrix(list(a.to_matrix(F)))
            if M is not None:
                vals = num.evaluate(list(M) + list(ax))
                ok = True
                for row in vals:
                    Mn, an = row[:9].reshape(3, 3), row[9:]
                    an = an / np.linalg.norm(an)
                    lam_a = an @ Mn @ an
                    lam_p = (np.trace(Mn) - lam_a) / 2
                    P = np.eye(3) - np.outer(an, an)
                    dev = np.max(np.abs(Mn - lam_p * P - lam_a * np.outer(an, an)))
                    ok &= dev <= _IDENTITY_RTOL * np.max(np.abs(Mn))
            if M is None or not ok:
                raise InputError(f"dl.from_sympy: the speed {_name(u)} has no kinematic differential equation and "
                                 f"{b.name} is not axisymmetric about its axis, so its angle matters; add the "
                                 f"angle as a coordinate with a kinematic differential equation for {_name(u)}")
        if not turned:
            raise InputError(f"dl.from_sympy: the speed {_name(u)} has no kinematic differential equation and "
                             f"turns no rigid body; give a kinematic differential equation for it")


def _reachable_fixed_points(point, frame):
    """Points connected to `point` by positions whose velocity in `frame` is set to zero, nearest first."""
    seen, queue, out = {point}, [point], []
    while queue:
        p = queue.pop(0)
        vel = p._vel_dict.get(frame)
        if vel is not None and vel == vel.__class__(0) and p is not point:
            out.append(p)
        for other in p._pos_dict:
            if other not in seen:
                seen.add(other)
                queue.append(other)
    return out


def _fresh(name, taken):
    """`name`, or `name_2`, `name_3`, … if the model already has a coordinate of that name."""
    out, i = name, 1
    while out in taken:
        i += 1
        out = f"{name}_{i}"
    taken.add(out)
    return out


def _complete_rolling(bodies, frame, u_map, taken, sympy, me, t, values=None):
    """Detect built-in rolling: mass-centre velocities that differ from the time derivative of
    the position from a zero-velocity point. Returns ([], {}) when there is none, else (the two
    contact coordinates, {"root", "cdot", "rows"}) — see from_sympy; refuses what cannot be completed."""
    num = _Numeric(sympy, t, 2, values)
    diffs = {}                   # zero-velocity point -> [(components in frame, vector) of v_pos − v_model]
    honest_everywhere = True
    for b in bodies:
        P = b.masscenter
        roots = _reachable_fixed_points(P, frame)
        if not roots:
            continue
        v_model = _velocity(P, frame).xreplace(u_map)
        honest = False
        for Z in roots:
            d = (P.pos_from(Z).dt(frame).xreplace(u_map) - v_model)
            comps = _components(d, frame)
            vals = num.evaluate(comps + _components(v_model, frame))
            honest |= bool(np.max(np.abs(vals[:, :3])) <= _IDENTITY_RTOL * max(1.0, np.max(np.abs(vals[:, 3:]))))
            diffs.setdefault(Z, []).append((comps, d))
        honest_everywhere &= honest
    if honest_everywhere:
        return [], {}
    how = ("rewrite it with the contact point's coordinates in the ground plane, the velocities from the "
           "positions (P.set_vel(N, P.pos_from(O).dt(N))) and the contact's slip velocity as velocity constraints")
    lead = ("dl.from_sympy: the bodies' velocities are not the time derivatives of their positions (the rolling "
            "is built into the kinematics: v2pt_theory from a contact point with zero velocity)")
    root = next((Z for Z, lst in diffs.items() if len(lst) == len(bodies)), None)
    if root is None:
        raise InputError(f"{lead} and not every body is located from one such point, so dl.from_sympy cannot "
                         f"complete the model; {how}")
    comps = [c for c, _ in diffs[root]]
    vals = num.evaluate([x for c in comps for x in c], samples=4).reshape(4, len(comps), 3)
    scale = max(1.0, np.max(np.abs(vals)))
    if np.max(np.abs(vals - vals[:, :1, :])) > _IDENTITY_RTOL * scale:
        raise InputError(f"{lead} and the difference is not the same for every body (not the slip of one "
                         f"contact point), so dl.from_sympy cannot complete the model; {how}")
    zero_axes = [i for i in range(3) if np.max(np.abs(vals[:, 0, i])) <= _IDENTITY_RTOL * scale]
    if len(zero_axes) != 1:
        raise InputError(f"{lead} and the slip velocity of {root} does not lie in a coordinate plane of {frame} "
                         f"(the ground), so dl.from_sympy cannot complete the model; {how}")
    axes = [i for i in range(3) if i != zero_axes[0]]
    basis = [frame.x, frame.y, frame.z]
    label = "xyz"
    contact = [me.dynamicsymbols(_fresh(f"{root.name}_{label[i]}", taken)) for i in axes]
    cdot = sum((c.diff(t) * basis[i] for c, i in zip(contact, axes)), me.Vector(0))
    slip = _slip_rows(cdot + diffs[root][0][1], frame, zero_axes[0], num, sympy)
    return contact, {"root": root, "cdot": cdot, "rows": slip}


def _slip_rows(slip, frame, normal_axis, num, sympy):
    """The two ground components of the slip velocity, in the frame (among those of its
    components, and `frame`) with an axis along the ground normal and the fewest operations."""
    normal = [frame.x, frame.y, frame.z][normal_axis]
    best, cost = None, None
    for F in list(dict.fromkeys([fr for _, fr in slip.args] + [frame])):
        axes = [F.x, F.y, F.z]
        try:
            along = num.evaluate([a.dot(normal) for a in axes], samples=2)
        except Exception:                   # noqa: BLE001 (frames not connected)
            continue
        k = [i for i in range(3) if np.all(np.abs(np.abs(along[:, i]) - 1.0) <= _IDENTITY_RTOL)]
        if len(k) != 1:
            continue
        rows = [slip.dot(axes[i]) for i in range(3) if i != k[0]]
        c = sympy.count_ops(rows)
        if cost is None or c < cost:
            best, cost = rows, c
    return best


def _check_velocities(kinetic, qsym, vsym, sympy):
    """The partial velocities must depend on q only (velocities linear and homogeneous in q̇)."""
    for _, J, kind in kinetic:
        if J.free_symbols & set(vsym):
            raise InputError(f"dl.from_sympy: a body's {kind} velocity is not linear in q̇ (the kinematic "
                             f"differential equations make u nonlinear in q̇); dalembert needs L = ½ q̇ᵀG(q)q̇ − V(q)")


def _refuse_time(what, e):
    raise InputError(f"dl.from_sympy: the {what} depends on time explicitly ({_short(e)}); only the potential "
                     f"V(q, t), the constraints' right-hand side ν(q, t) and the loads may depend on t: make t a "
                     f"coordinate or write the time dependence there")


def _mechanical(L, qsym, vsym, t, sympy):
    """(G (n, n) Matrix, V) of a mechanical Lagrangian L = ½ vᵀGv − V (V may hold the time t);
    refuses others."""
    grad = sympy.Matrix([L]).jacobian(list(vsym))
    G = grad.jacobian(list(vsym))
    if G.free_symbols & set(vsym):
        raise InputError("dl.from_sympy: the Lagrangian is not mechanical (its velocity dependence is "
                         "not quadratic: G = ∂²L/∂q̇² depends on q̇); dalembert needs L = ½ q̇ᵀG(q)q̇ − V(q)")
    zero = dict.fromkeys(vsym, 0)
    linear = [x for x in grad.xreplace(zero) if x != 0]
    if linear:
        f = sympy.lambdify([list(qsym), t], linear, modules="numpy", cse=True)
        rng = np.random.default_rng(3)
        worst = max(float(np.max(np.abs(np.asarray(f(rng.uniform(-1.2, 1.2, len(qsym)), rng.uniform(0, 5)),
                                                   dtype=float))))
                    for _ in range(3))
        if worst > 1e-12:
            raise InputError("dl.from_sympy: the Lagrangian has terms linear in q̇ (gyroscopic or magnetic "
                             "terms), which dalembert's mechanical systems do not model")
    return G, -L.xreplace(zero)


def _linear_constraints(cons, vsym, sympy):
    """(μ (m, n) Matrix, ν (m,) list) with constraints μ v = ν."""
    for i, c in enumerate(cons):
        if not (c.free_symbols & set(vsym)):
            raise InputError(f"dl.from_sympy: constraint {i} ({_short(c)}) does not involve the "
                             f"velocities: a holonomic (configuration) constraint; pass it as "
                             f"holonomic_constraints=[...]")
    if not cons:
        return sympy.zeros(0, len(vsym)), []
    A = sympy.Matrix(cons).jacobian(list(vsym))
    for i in range(A.shape[0]):
        if A.row(i).free_symbols & set(vsym):
            raise InputError(f"dl.from_sympy: constraint {i} ({_short(cons[i])}) is not linear in the "
                             f"velocities (a nonlinear velocity constraint); dalembert integrates constraints "
                             f"μ(q) q̇ = ν(q)")
    b = [-c.xreplace(dict.fromkeys(vsym, 0)) for c in cons]
    return A, b


def _independent_rows(Phi, mu, qsym, sympy):
    """Indices of the rows of μ that are independent of Φ and of the rows kept before them at
    random configurations (a row that Φ and the others imply — the time derivative of a
    configuration constraint among Kane's velocity constraints — is dropped)."""
    m, k, n = mu.shape[0], Phi.shape[0], len(qsym)
    if m == 0:
        return []
    f = sympy.lambdify([list(qsym)], list(Phi) + list(mu), modules="numpy", cse=True)
    rng = np.random.default_rng(4)
    samples = []
    for _ in range(3):
        vals = np.array([float(x) for x in f(rng.uniform(-0.7, 0.7, n))])
        samples.append((vals[:k * n].reshape(k, n), vals[k * n:].reshape(m, n)))
    keep = []
    for i in range(m):
        dependent = True
        for P, M in samples:
            basis = np.vstack([P, M[keep]]) if (k or keep) else np.zeros((0, n))
            row = M[i]
            if basis.shape[0]:
                coef, *_ = np.linalg.lstsq(basis.T, row, rcond=None)
                row = row - basis.T @ coef
            dependent &= np.linalg.norm(row) <= _IDENTITY_RTOL * max(1.0, np.linalg.norm(M[i]))
        if not dependent:
            keep.append(i)
    return keep


def _short(e, width=80) -> str:
    s = str(e)
    return s if len(s) <= width else s[:width - 1] + "…"


def _constant(M):
    return np.array(M.tolist(), dtype=float)


def _lambdify(exprs, qsym, sympy):
    return sympy.lambdify([list(qsym)], exprs, modules="jax", cse=True)


def _stack(entries):
    return jnp.stack([jnp.asarray(e, jnp.float64) for e in entries])


def _matrix_fn(M, qsym, sympy):
    rows, cols = M.shape
    f = _lambdify([M[i, j] for i in range(rows) for j in range(cols)], qsym, sympy)
    return lambda q: _stack(f(q)).reshape(rows, cols)


def _vector_fn(v, qsym, sympy, t=None):
    """v(q) -> (len(v),), or v(q, t) when an entry contains the time t (ν(q, t))."""
    if t is not None and any(sympy.sympify(x).has(t) for x in v):
        f = sympy.lambdify([list(qsym), t], list(v), modules="jax", cse=True)
        return lambda q, t: _stack(f(q, t))
    f = _lambdify(list(v), qsym, sympy)
    return lambda q: _stack(f(q))


def _scalar_fn(V, qsym, sympy, t=None):
    """V(q) -> scalar, or V(q, t) when V contains the time t."""
    if t is not None and sympy.sympify(V).has(t):
        f = sympy.lambdify([list(qsym), t], V, modules="jax", cse=True)
        return lambda q, t: jnp.asarray(f(q, t), jnp.float64)
    f = _lambdify(V, qsym, sympy)
    return lambda q: jnp.asarray(f(q), jnp.float64)


def _kinetic_fn(kinetic, qsym, n, sympy):
    """G(q) = Σ m J_Pᵀ J_P + Σ Wᵀ I W from the bodies' partial velocities J_P (3, n), partial
    angular velocities W (3, n) and central inertia matrices I (3, 3) — one lambdify (with common
    subexpressions) for all their entries; a constant G becomes an array."""
    flat, layout = [], []
    for w, J, kind in kinetic:
        wl = [w] if kind == "translation" else list(w)
        layout.append((kind, len(wl)))
        flat += wl + list(J)
    exprs = [sympy.sympify(x) for x in flat]
    if not any(e.free_symbols & set(qsym) for e in exprs):
        G = np.zeros((n, n))
        it = iter(_constant(sympy.Matrix(exprs)).ravel())
        for kind, nw in layout:
            w = np.array([next(it) for _ in range(nw)])
            J = np.array([next(it) for _ in range(3 * n)]).reshape(3, n)
            G += (w[0] * J.T @ J) if kind == "translation" else J.T @ w.reshape(3, 3) @ J
        return jnp.asarray(G, jnp.float64)
    f = _lambdify(exprs, qsym, sympy)

    def mass_matrix(q):
        vals = _stack(f(q))
        G, i = jnp.zeros((n, n), jnp.float64), 0
        for kind, nw in layout:
            w = vals[i:i + nw]
            J = vals[i + nw:i + nw + 3 * n].reshape(3, n)
            i += nw + 3 * n
            G = G + (w[0] * J.T @ J if kind == "translation" else J.T @ w.reshape(3, 3) @ J)
        return 0.5 * (G + G.T)
    return mass_matrix
