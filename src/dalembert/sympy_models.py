"""Models from SymPy mechanics: :func:`from_sympy` turns a mechanical Lagrangian and linear
velocity constraints written with ``sympy.physics.mechanics`` into a
:class:`~dalembert.systems.NonholonomicSystem` — the metric G(q), the potential V(q), the
constraint covectors μ(q) and, for affine constraints, ν(q) — compiled by
``sympy.lambdify(..., modules="jax")``. Kane's or Lagrange's solved equations of motion are not
used: the integrators need the structure (L and the constraint distribution), not the ODE.

    pip install "dalembert[sympy]"

Accepted models: a ``LagrangesMethod`` (its Lagrangian, coordinates and ``nonhol_coneqs``), a
``KanesMethod`` or ``System`` (the bodies' kinetic and potential energies, the kinematic
differential equations, the velocity constraints), or a Lagrangian expression with
``coordinates=`` and ``constraints=``. See docs/sympy.md.
"""
from __future__ import annotations

from typing import Any

import jax.numpy as jnp

from .errors import InputError

__all__ = ["from_sympy"]


def _sympy():
    try:
        import sympy
        from sympy.physics import mechanics
    except ImportError:                                            # pragma: no cover
        raise InputError("dl.from_sympy needs SymPy: pip install 'dalembert[sympy]'") from None
    return sympy, mechanics


def from_sympy(model: Any = None, *, lagrangian=None, coordinates=None, constraints=(), potential=None,
               values: dict | None = None, name: str = "sympy-model"):
    """A :class:`~dalembert.systems.NonholonomicSystem` from a SymPy mechanics model.

    Parameters
    ----------
    model : ``sympy.physics.mechanics.LagrangesMethod``, ``KanesMethod`` or ``System``, or None
        (then give ``lagrangian`` and ``coordinates``). From a ``LagrangesMethod``: its Lagrangian,
        ``q`` and nonholonomic constraint equations. From a ``KanesMethod`` / ``System``: the
        kinetic energy and ``potential_energy`` of its bodies (particles and rigid bodies), its
        kinematic differential equations (to write the generalised speeds u through q̇) and its
        velocity constraints; loads other than those are refused (write them as a potential).
    lagrangian : SymPy expression L(q, q̇) = ½ q̇ᵀG(q)q̇ − V(q) in the ``dynamicsymbols``
        ``coordinates`` and their time derivatives.
    coordinates : sequence of ``dynamicsymbols`` q_1 … q_n.
    constraints : sequence of expressions, each linear in q̇ and = 0 along motions (e.g. the slip
        velocity of a contact point), m < n of them, or from the model.
    potential : optional expression V(q) added to the model's potential (e.g. gravity on a
        ``System``, whose uniform-gravity loads are not read).
    values : ``{symbol: number}`` for the model's constant symbols (masses, lengths, g).
    name : the system's name.

    Returns
    -------
    NonholonomicSystem with mass_matrix (n, n), potential (J), constraint_matrix (m, n) and, for
    constraints μ q̇ = ν with ν ≠ 0, constraint_rhs (m,), all traceable JAX functions of q (n,).

    Raises
    ------
    InputError : SymPy missing; a constraint that is not linear in q̇ (nonlinear velocity
        constraint) or does not contain q̇ (holonomic: eliminate it, or use coordinates on the
        constraint manifold); holonomic constraints in the model; a Lagrangian that is not
        mechanical (not quadratic in q̇, or with terms linear in q̇); symbols without values (named);
        explicit time dependence; generalised speeds that the kinematic differential equations do
        not give as linear functions of q̇ (write the model with u = q̇, or with kinematic equations
        linear in u); loads that are not a potential.

    Source: the discrete mechanics of Ferraro–Jiménez–Martín de Diego 2015 §2–§4 need (G, V, μ);
    SymPy's ``linear_eq_to_matrix`` and ``lambdify`` (modules="jax").
    """
    sympy, me = _sympy()
    t = me.dynamicsymbols._t
    L, qs, cons = _parts(model, lagrangian, coordinates, constraints, sympy, me, t)
    n = len(qs)
    qd = [q.diff(t) for q in qs]
    qsym = sympy.symbols(f"q0:{n}", real=True)
    vsym = sympy.symbols(f"v0:{n}", real=True)
    to_plain = {**dict(zip(qd, vsym)), **dict(zip(qs, qsym))}
    by_symbol = {k: v for k, v in (values or {}).items() if not isinstance(k, str)}
    by_name = {k: v for k, v in (values or {}).items() if isinstance(k, str)}

    def plain(expr, what):
        e = sympy.sympify(expr).subs(to_plain)
        # a value given by name matches the symbol of that name, whatever its assumptions
        e = e.subs({**{s: by_name[s.name] for s in e.free_symbols if s.name in by_name}, **by_symbol})
        if e.has(t):
            raise InputError(f"dl.from_sympy: the {what} depends on time explicitly ({_short(e)}); "
                             f"dalembert integrates autonomous systems: make t a coordinate or remove it")
        bad = e.free_symbols - set(qsym) - set(vsym)
        if bad:
            raise InputError(f"dl.from_sympy: symbols without values in the {what}: "
                             f"{', '.join(sorted(map(str, bad)))}; pass values={{symbol: number, ...}}")
        return e

    L = plain(L, "Lagrangian")
    V_extra = plain(potential, "potential") if potential is not None else sympy.Integer(0)
    if any(s in vsym for s in V_extra.free_symbols):
        raise InputError("dl.from_sympy: potential must not depend on velocities")
    G, V = _mechanical(L, vsym, sympy)
    V = V + V_extra
    mu, nu = _linear_constraints([plain(c, "constraint") for c in cons], vsym, sympy)
    if not 1 <= mu.shape[0] < n:
        raise InputError(f"dl.from_sympy: need 1 ≤ m < n constraints; got m = {mu.shape[0]} for n = {n} "
                         f"coordinates")
    from .systems import NonholonomicSystem
    constant_G = not (G.free_symbols & set(qsym))
    rhs = None
    if any(x != 0 for x in nu):
        rhs = _vector_fn(nu, qsym, sympy)
    return NonholonomicSystem(
        mass_matrix=_matrix_fn(G, qsym, sympy) if not constant_G else jnp.asarray(_constant(G), jnp.float64),
        potential=_scalar_fn(V, qsym, sympy), constraint_matrix=_matrix_fn(mu, qsym, sympy),
        constraint_rhs=rhs, name=name)


def _parts(model, lagrangian, coordinates, constraints, sympy, me, t):
    """(L(q, q̇), q list, constraint expressions) from the inputs."""
    if model is None:
        if lagrangian is None or coordinates is None:
            raise InputError("dl.from_sympy: give a LagrangesMethod, KanesMethod or System, or "
                             "lagrangian= and coordinates=")
        return lagrangian, list(coordinates), list(constraints)
    if isinstance(model, me.LagrangesMethod):
        hol = getattr(model, "_hol_coneqs", None) or []
        if len(hol):
            _holonomic_error()
        qs = list(model.q)
        # LagrangesMethod keeps the nonholonomic equations as given, and its holonomic ones
        # differentiated, in coneqs; the holonomic ones were refused above
        cons = list(getattr(model, "coneqs", []) or []) + list(constraints)
        return model._L[0], qs, cons
    if isinstance(model, (me.KanesMethod, me.System)):
        return _kane_parts(model, constraints, sympy, me, t)
    raise InputError(f"dl.from_sympy: unsupported model {type(model).__name__}; give a LagrangesMethod, "
                     f"KanesMethod or System, or lagrangian= and coordinates=")


def _kane_parts(model, constraints, sympy, me, t):
    """A KanesMethod or System: T from its bodies with u written through q̇ by the kinematic
    differential equations, V from the bodies' potential_energy, constraints from its velocity
    constraints (in u, rewritten through q̇)."""
    is_system = isinstance(model, me.System)
    qs = list(model.q)
    qd = [q.diff(t) for q in qs]
    us = list(model.u)
    if is_system:
        if len(model.holonomic_constraints):
            _holonomic_error()
        frame, bodies = model.frame, list(model.bodies)
        kdes = list(model.kdes)
        vcons = list(model.nonholonomic_constraints)
        loads = list(model.loads)
    else:
        if getattr(model, "_f_h", None) is not None and len(model._f_h):
            _holonomic_error()
        frame, bodies = model._inertial, list(model.bodies or [])
        kdes = list(model._k_ku_implicit * sympy.Matrix(us) + model._k_kqdot_implicit * sympy.Matrix(qd)
                    + model._f_k_implicit) if getattr(model, "_qdot_u_map", None) is not None else []
        vcons = list(model._f_nh + model._k_nh * sympy.Matrix(us)) if len(model._k_nh) else []
        loads = list(model.loads or [])
    if loads:
        raise InputError("dl.from_sympy: the model has loads; dalembert needs conservative forces as a "
                         "potential: set body.potential_energy (or pass potential=V(q)) and remove the loads")
    if not bodies:
        raise InputError("dl.from_sympy: the model has no bodies to take the kinetic energy from")
    u_of_qd = _speeds_through_qdot(kdes, us, qd, sympy)
    T = sum(b.kinetic_energy(frame) for b in bodies)
    V = sum(getattr(b, "potential_energy", 0) for b in bodies)
    L = sympy.expand((T - V).subs(u_of_qd))
    cons = [sympy.sympify(c).subs(u_of_qd) for c in vcons] + list(constraints)
    return L, qs, cons


def _speeds_through_qdot(kdes, us, qd, sympy):
    """{u_i: expression in q, q̇} from kinematic differential equations linear in u."""
    if not us or set(us) == set(qd):
        return {}
    if not kdes:
        raise InputError("dl.from_sympy: the model's generalised speeds u are not q̇ and it has no "
                         "kinematic differential equations; write the model with u = q̇ or give kd_eqs")
    try:
        A, b = sympy.linear_eq_to_matrix([sympy.sympify(k) for k in kdes], us)
    except Exception:                      # noqa: BLE001 (sympy raises NonlinearError and others)
        raise InputError("dl.from_sympy: the kinematic differential equations are not linear in the "
                         "generalised speeds u; write the model with u = q̇") from None
    if A.shape[0] != len(us) or A.det() == 0:
        raise InputError("dl.from_sympy: the kinematic differential equations do not determine every "
                         "generalised speed u; write the model with u = q̇")
    sol = A.LUsolve(b)
    return {u: sympy.simplify(s) for u, s in zip(us, sol)}


def _holonomic_error():
    raise InputError("dl.from_sympy: the model has holonomic (configuration) constraints; dalembert "
                     "integrates velocity constraints only: eliminate them (solve for dependent "
                     "coordinates) or use coordinates on the constraint manifold")


def _mechanical(L, vsym, sympy):
    """(G (n, n) Matrix, V) of a mechanical Lagrangian L = ½ vᵀGv − V; refuses others."""
    G = sympy.hessian(L, vsym)
    if G.free_symbols & set(vsym):
        raise InputError("dl.from_sympy: the Lagrangian is not mechanical (its velocity dependence is "
                         "not quadratic: G = ∂²L/∂q̇² depends on q̇); dalembert needs L = ½ q̇ᵀG(q)q̇ − V(q)")
    zero = dict.fromkeys(vsym, 0)
    linear = [sympy.simplify(sympy.diff(L, v).subs(zero)) for v in vsym]
    if any(x != 0 for x in linear):
        raise InputError("dl.from_sympy: the Lagrangian has terms linear in q̇ (gyroscopic or magnetic "
                         "terms), which dalembert's mechanical systems do not model")
    return G.applyfunc(sympy.simplify), -L.subs(zero)


def _linear_constraints(cons, vsym, sympy):
    """(μ (m, n) Matrix, ν (m,) list) with constraints μ v = ν."""
    rows = []
    for i, c in enumerate(cons):
        if not (c.free_symbols & set(vsym)):
            raise InputError(f"dl.from_sympy: constraint {i} ({_short(c)}) does not involve the "
                             f"velocities: a holonomic constraint; eliminate it or use coordinates on "
                             f"the constraint manifold")
        rows.append(c)
    if not rows:
        return sympy.zeros(0, len(vsym)), []
    try:
        A, b = sympy.linear_eq_to_matrix(rows, vsym)
    except Exception:                      # noqa: BLE001 (sympy.solvers NonlinearError)
        bad = next(i for i, c in enumerate(rows) if any(sympy.diff(c, v, 2) != 0 for v in vsym)
                   or any(sympy.diff(c, v, w) != 0 for v in vsym for w in vsym))
        raise InputError(f"dl.from_sympy: constraint {bad} ({_short(rows[bad])}) is not linear in the "
                         f"velocities (a nonlinear velocity constraint); dalembert integrates constraints "
                         f"μ(q) q̇ = ν(q)") from None
    return A, list(b)


def _short(e, width=80) -> str:
    s = str(e)
    return s if len(s) <= width else s[:width - 1] + "…"


def _constant(M):
    import numpy as np
    return np.array(M.tolist(), dtype=float)


def _lambdify(exprs, qsym, sympy):
    return sympy.lambdify([list(qsym)], exprs, modules="jax", cse=True)


def _matrix_fn(M, qsym, sympy):
    rows, cols = M.shape
    f = _lambdify([M[i, j] for i in range(rows) for j in range(cols)], qsym, sympy)

    def fn(q):
        entries = [jnp.asarray(e, jnp.float64) for e in f(q)]
        return jnp.stack(entries).reshape(rows, cols)
    return fn


def _vector_fn(v, qsym, sympy):
    f = _lambdify(list(v), qsym, sympy)
    return lambda q: jnp.stack([jnp.asarray(e, jnp.float64) for e in f(q)])


def _scalar_fn(V, qsym, sympy):
    f = _lambdify(V, qsym, sympy)
    return lambda q: jnp.asarray(f(q), jnp.float64)
