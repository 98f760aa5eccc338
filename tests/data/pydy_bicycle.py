"""PyDy's Carvallo–Whipple bicycle example imported through ``dl.from_sympy``.

The model is the construction of PyDy's documentation example ``docs/examples/carvallo-whipple.rst``
(github.com/pydy/pydy, BSD licence): Moore's formulation of the Whipple bicycle (J. K. Moore,
"Human control of a bicycle", PhD thesis, UC Davis, 2012, §2), axes z down, with the benchmark
parameters of Meijaard, Papadopoulos, Ruina & Schwab (Proc. R. Soc. A 463 (2007) 1955) converted
to Moore's parameters (the example's numbers). Coordinates q3 yaw, q4 roll, q5 pitch (q5 = λ, the
steer-axis tilt, upright), q7 steer; wheel rates u6, u8 without angle coordinates; the rear contact
point dn has zero velocity and the bodies' velocities come by ``v2pt_theory`` from it (the rolling is
built into the kinematics); gravity loads on the four mass centres; three specified torques T4
(roll), T6 (rear wheel), T7 (steer). Unchanged for the import, except that the example's
``ReferenceFrame`` subclass (index style only) is the plain one.
``dl.from_sympy`` completes the model: the rear contact's coordinates (dn_x, dn_y), the wheel
angles (angle_u6, angle_u8), the rear slip as two velocity constraints; the front contact's
vertical velocity (the derivative of φ) is dropped.
"""
from __future__ import annotations

#: PyDy's example values: the benchmark (Meijaard et al. 2007, Table 1) in Moore's parameters
#: (m, kg, kg·m², m/s²).
VALUES = {"rf": 0.35, "rr": 0.3, "d1": 0.9534570696121849, "d3": 0.03207142672761929, "d2": 0.2676445084476887,
          "l1": 0.4707271515135145, "l2": -0.47792881146460797, "l4": -0.3699518200282974,
          "l3": -0.00597083392418685, "mc": 85.0, "md": 2.0, "me": 4.0, "mf": 3.0, "id11": 0.0603, "id22": 0.12,
          "if11": 0.1405, "if22": 0.28, "ic11": 7.178169776497895, "ic22": 11.0, "ic31": 3.8225535938357873,
          "ic33": 4.821830223502103, "ie11": 0.05841337700152972, "ie22": 0.06, "ie31": 0.009119225261946298,
          "ie33": 0.007586622998470264, "g": 9.81}


def pydy_bicycle():
    """PyDy's Carvallo–Whipple bicycle as a KanesMethod whose ``kanes_equations(bodies, loads)``
    were formed. Returns (kane, values {name: number}, the specified torques [T4, T6, T7])."""
    import sympy as sm
    import sympy.physics.mechanics as mec

    N, A, B, C, D, E, F = (mec.ReferenceFrame(x) for x in "NABCDEF")
    q1, q2, q3, q4 = mec.dynamicsymbols('q1 q2 q3 q4')
    q5, q6, q7, q8 = mec.dynamicsymbols('q5 q6 q7 q8')
    u1, u2, u3, u4 = mec.dynamicsymbols('u1 u2 u3 u4')
    u5, u6, u7, u8 = mec.dynamicsymbols('u5 u6 u7 u8')
    A.orient(N, 'Axis', (q3, N.z))                   # yaw
    B.orient(A, 'Axis', (q4, A.x))                   # roll
    C.orient(B, 'Axis', (q5, B.y))                   # pitch
    E.orient(C, 'Axis', (q7, C.z))                   # steer
    rf, rr = sm.symbols('rf rr')
    d1, d2, d3 = sm.symbols('d1 d2 d3')
    l1, l2, l3, l4 = sm.symbols('l1 l2 l3 l4')
    g = sm.symbols('g')
    mc, md, me, mf = sm.symbols('mc md me mf')
    ic11, ic22, ic33, ic31 = sm.symbols('ic11 ic22 ic33 ic31')
    id11, id22 = sm.symbols('id11 id22')
    ie11, ie22, ie33, ie31 = sm.symbols('ie11 ie22 ie33 ie31')
    if11, if22 = sm.symbols('if11 if22')
    T4, T6, T7 = mec.dynamicsymbols('T4 T6 T7')
    dn = mec.Point('dn')                             # rear contact
    do = mec.Point('do')
    do.set_pos(dn, -rr * B.z)                        # rear wheel centre
    co = mec.Point('co')
    co.set_pos(do, l1 * C.x + l2 * C.z)              # rear frame mass centre
    ce = mec.Point('ce')
    ce.set_pos(do, d1 * C.x)                         # steer axis point
    fo = mec.Point('fo')
    fo.set_pos(ce, d2 * E.z + d3 * E.x)              # front wheel centre
    eo = mec.Point('eo')
    eo.set_pos(fo, l3 * E.x + l4 * E.z)              # front frame mass centre
    fn = mec.Point('fn')
    fn.set_pos(fo, rf * E.y.cross(A.z).cross(E.y).normalize())     # front contact
    holonomic = fn.pos_from(dn).dot(A.z)
    t = mec.dynamicsymbols._t
    kinematical = [q3.diff(t) - u3, q4.diff(t) - u4, q5.diff(t) - u5, q7.diff(t) - u7]
    A.set_ang_vel(N, u3 * N.z)
    B.set_ang_vel(A, u4 * A.x)
    C.set_ang_vel(B, u5 * B.y)
    D.set_ang_vel(C, u6 * C.y)
    E.set_ang_vel(C, u7 * C.z)
    F.set_ang_vel(E, u8 * E.y)
    dn.set_vel(N, 0.0 * N.x)
    do.v2pt_theory(dn, N, D)
    co.v2pt_theory(do, N, C)
    ce.v2pt_theory(do, N, C)
    fo.v2pt_theory(ce, N, E)
    eo.v2pt_theory(fo, N, E)
    fn.v2pt_theory(fo, N, F)
    nonholonomic = [fn.vel(N).dot(A.x), fn.vel(N).dot(A.z), fn.vel(N).dot(A.y)]
    Ic = mec.inertia(C, ic11, ic22, ic33, 0.0, 0.0, ic31)
    Id = mec.inertia(C, id11, id22, id11, 0.0, 0.0, 0.0)
    Ie = mec.inertia(E, ie11, ie22, ie33, 0.0, 0.0, ie31)
    If = mec.inertia(E, if11, if22, if11, 0.0, 0.0, 0.0)
    bodies = [mec.RigidBody('Rear Frame', co, C, mc, (Ic, co)), mec.RigidBody('Rear Wheel', do, D, md, (Id, do)),
              mec.RigidBody('Front Frame', eo, E, me, (Ie, eo)), mec.RigidBody('Front Wheel', fo, F, mf, (If, fo))]
    loads = [(co, mc * g * A.z), (do, md * g * A.z), (eo, me * g * A.z), (fo, mf * g * A.z),
             (C, T4 * A.x - T6 * B.y - T7 * C.z), (D, T6 * C.y), (E, T7 * C.z)]
    kane = mec.KanesMethod(N, [q3, q4, q7], [u4, u6, u7], kd_eqs=kinematical, q_dependent=[q5],
                           configuration_constraints=[holonomic], u_dependent=[u3, u5, u8],
                           velocity_constraints=nonholonomic)
    kane.kanes_equations(bodies, loads)
    return kane, dict(VALUES), [T4, T6, T7]


def import_bicycle():
    """``dl.from_sympy`` of :func:`pydy_bicycle`: n = 8 coordinates (q3, q4, q7, q5, dn_x, dn_y,
    angle_u6, angle_u8), k = 1, m = 4; the gravity loads as the potential, the three torques as
    the force with controls (T4, T6, T7)."""
    import dalembert as dl

    kane, values, torques = pydy_bicycle()
    return dl.from_sympy(kane, values=values, controls=torques, name="pydy-bicycle")
