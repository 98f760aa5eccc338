"""The peers of the IFToMM "uncontrolled bicycle" benchmark, run on this machine: Exudyn 1.13.6
(its own IFToMM model, main/pythonDev/Examples/bicycleIftommBenchmark.py in github:jgerstmayr/EXUDYN,
J. Gerstmayr 2021: four rigid bodies with Euler-parameter nodes, three revolute joints, two
ObjectJointRollingDisc, the TrapezoidalIndex2 solver with modified Newton) and PyDy/SymPy (the
Whipple bicycle of SymPy's sympy/physics/mechanics/tests/test_kane3.py with its gravity loads,
Kane's equations in the full mass-matrix form with the dependent speeds, PyDy's Cython code
generator, SciPy ``solve_ivp`` DOP853).

Each run reports the IFToMM energy metric 100·(max E − min E)/E₀ (%), the CPU time of the time
integration alone (``time.process_time``), the set-up time (model build, code generation and
compilation) and the largest configuration-constraint residual (m): for Exudyn the front and rear
contact points' heights above the ground and the position mismatch of the three revolute joints, for
PyDy the front contact point's height (the pitch q4 is integrated, not projected). Energy and
residuals are computed after the run from stored states, outside the timed part.

    python benchmarks/iftomm_peers.py exudyn --h 0.014 [--maneuver M2] [--t-final 20]
    python benchmarks/iftomm_peers.py pydy --rtol 1e-10 [--maneuver M2] [--t-final 20]

prints one JSON line (the benchmark script benchmarks/iftomm_bicycle.py runs these in subprocesses).
Needs the optional extra ``pip install -e .[peers]``; a peer that is not installed gives a JSON line
with ``"missing": "<package>"``.

Manoeuvres (IFToMM; Meijaard et al., Proc. R. Soc. A 463 (2007) parameters): M1 4 m/s with roll
rate 0.05 rad/s, M2 4.6 m/s and 0.5 rad/s, M3 8 m/s and 0.05 rad/s, upright and straight.
"""
from __future__ import annotations

import argparse
import importlib.util
import json
import sys
import time
from pathlib import Path

import numpy as np

MANEUVERS = {"M1": (4.0, 0.05), "M2": (4.6, 0.5), "M3": (8.0, 0.05)}


def metric(E) -> float:
    """The IFToMM energy metric 100·(max E − min E)/E₀ in %."""
    E = np.asarray(E, float)
    return float(100.0 * (E.max() - E.min()) / E[0])


# --- Exudyn -------------------------------------------------------------------------------------

def exudyn_run(maneuver="M2", h=0.014, t_final=20.0):
    """Exudyn's IFToMM bicycle (the example script's model and solver settings, graphics and file
    output off, sensors stored in memory at every step) for ``t_final`` s at step ``h``. Returns a
    dict: metric (%), cpu_s (SolveDynamic only), setup_s, drift (m), t, roll, steer, E arrays."""
    try:
        import exudyn as exu
        from exudyn.utilities import (ObjectJointRollingDisc, RigidBodyInertia, RotationMatrixY,
                                      RotationMatrixZ, SensorBody, MarkerBodyRigid)
    except ImportError:
        return {"missing": "exudyn"}
    t_setup = time.process_time()
    vX0, omegaX0 = MANEUVERS[maneuver]
    sZ = -1
    w, lam = 1.02, np.pi / 10
    g = [0, 0, 9.81 * sZ]
    rR, mR, IRxx, IRyy = 0.3, 2.0, 0.0603, 0.12
    rF, mF, IFxx, IFyy = 0.35, 3.0, 0.1405, 0.28
    inertiaR = RigidBodyInertia(mass=mR, inertiaTensor=np.array([[IRyy, 0, 0], [0, IRxx, 0], [0, 0, IRxx]]))
    inertiaF = RigidBodyInertia(mass=mF, inertiaTensor=np.array([[IFyy, 0, 0], [0, IFxx, 0], [0, 0, IFxx]]))
    bCOM = np.array([0.3, 0, -0.9 * sZ])
    mB, zz = 85.0, -1
    inertiaB = RigidBodyInertia(mass=mB, inertiaTensor=np.array([[9.2, 0, 2.4 * zz], [0, 11, 0], [2.4 * zz, 0, 2.8]]),
                                com=np.zeros(3))
    hCOM = np.array([0.9, 0, -0.7 * sZ])
    mH = 4.0
    inertiaH = RigidBodyInertia(mass=mH, inertiaTensor=np.array([[0.05892, 0, -0.00756 * zz], [0, 0.06, 0],
                                                                 [-0.00756 * zz, 0, 0.00708]]), com=np.zeros(3))
    P1 = np.array([0, 0, -0.3 * sZ])
    P2 = np.array([0.82188470506, 0, -0.85595086466 * sZ])
    P3 = np.array([w, 0, -0.35 * sZ])
    omegaRy0, omegaFy0 = -vX0 / rR * sZ, -vX0 / rF * sZ

    SC = exu.SystemContainer()
    mbs = SC.AddSystem()
    bR = mbs.CreateRigidBody(referencePosition=P1, referenceRotationMatrix=RotationMatrixZ(np.pi * 0.5),
                             initialVelocity=[vX0, omegaX0 * P1[2] * sZ, 0],
                             initialAngularVelocity=[omegaX0, omegaRy0, 0], inertia=inertiaR, gravity=g,
                             returnDict=True)["bodyNumber"]
    bF = mbs.CreateRigidBody(referencePosition=P3, referenceRotationMatrix=RotationMatrixZ(np.pi * 0.5),
                             initialVelocity=[vX0, omegaX0 * P3[2] * sZ, 0],
                             initialAngularVelocity=[omegaX0, omegaFy0, 0], inertia=inertiaF, gravity=g,
                             nodeType=exu.NodeType.RotationEulerParameters, returnDict=True)["bodyNumber"]
    bB = mbs.CreateRigidBody(referencePosition=bCOM, initialVelocity=[vX0, omegaX0 * bCOM[2] * sZ, 0],
                             initialAngularVelocity=[omegaX0, 0, 0], inertia=inertiaB, gravity=g,
                             nodeType=exu.NodeType.RotationEulerParameters, returnDict=True)["bodyNumber"]
    bH = mbs.CreateRigidBody(referencePosition=hCOM, initialVelocity=[vX0, omegaX0 * hCOM[2] * sZ, 0],
                             initialAngularVelocity=[omegaX0, 0, 0], inertia=inertiaH, gravity=g,
                             nodeType=exu.NodeType.RotationEulerParameters, returnDict=True)["bodyNumber"]
    oGround = mbs.CreateGround()
    markerGround = mbs.AddMarker(MarkerBodyRigid(bodyNumber=oGround, localPosition=[0, 0, 0]))
    markerR = mbs.AddMarker(MarkerBodyRigid(bodyNumber=bR, localPosition=[0, 0, 0]))
    markerF = mbs.AddMarker(MarkerBodyRigid(bodyNumber=bF, localPosition=[0, 0, 0]))
    mbs.CreateRevoluteJoint(itemNumbers=[bR, bB], position=P1, axis=[0, 1, 0])
    mbs.CreateRevoluteJoint(itemNumbers=[bF, bH], position=P3, axis=[0, 1, 0])
    oSteer = mbs.CreateRevoluteJoint(itemNumbers=[bB, bH], position=P2 - bCOM, useGlobalFrame=False,
                                     axis=RotationMatrixY(-lam) @ [0, 0, 1])
    mbs.AddObject(ObjectJointRollingDisc(markerNumbers=[markerGround, markerR], discRadius=rR))
    mbs.AddObject(ObjectJointRollingDisc(markerNumbers=[markerGround, markerF], discRadius=rF))

    OV = exu.OutputVariableType
    bodies, masses = [bB, bH, bR, bF], [mB, mH, mR, mF]
    inertias = [inertiaB.inertiaTensor, inertiaH.inertiaTensor, inertiaR.inertiaTensor, inertiaF.inertiaTensor]

    def sensor(b, ov, local=None):
        kw = {} if local is None else {"localPosition": list(local)}
        return mbs.AddSensor(SensorBody(bodyNumber=b, storeInternal=True, writeToFile=False, outputVariableType=ov,
                                        **kw))
    sens = [(sensor(b, OV.Position), sensor(b, OV.Velocity), sensor(b, OV.AngularVelocityLocal)) for b in bodies]
    sRot = {b: sensor(b, OV.RotationMatrix) for b in (bB, bR, bF)}
    sOmegaB = sens[0][2]
    sRearHub = sensor(bB, OV.VelocityLocal, P1 - bCOM)
    joints = [(sensor(bR, OV.Position), sensor(bB, OV.Position, P1 - bCOM)),
              (sensor(bF, OV.Position), sensor(bH, OV.Position, P3 - hCOM)),
              (sensor(bB, OV.Position, P2 - bCOM), sensor(bH, OV.Position, P2 - hCOM))]
    sSteer = mbs.AddSensor(exu.utilities.SensorObject(objectNumber=oSteer, storeInternal=True, writeToFile=False,
                                                      outputVariableType=OV.Rotation))
    sSteerVel = mbs.AddSensor(exu.utilities.SensorObject(objectNumber=oSteer, storeInternal=True, writeToFile=False,
                                                         outputVariableType=OV.AngularVelocityLocal))
    sRotB = sensor(bB, OV.Rotation)
    mbs.Assemble()
    s = exu.SimulationSettings()
    s.timeIntegration.numberOfSteps = int(round(t_final / h))
    s.timeIntegration.endTime = t_final
    s.solutionSettings.writeSolutionToFile = False
    s.solutionSettings.sensorsWritePeriod = h
    s.timeIntegration.verboseMode = 0
    s.timeIntegration.generalizedAlpha.spectralRadius = 0.7
    s.timeIntegration.generalizedAlpha.computeInitialAccelerations = True
    s.timeIntegration.newton.useModifiedNewton = True
    setup = time.process_time() - t_setup
    c0 = time.process_time()
    mbs.SolveDynamic(s, solverType=exu.DynamicSolverType.TrapezoidalIndex2)
    cpu = time.process_time() - c0

    def data(sn):
        return np.asarray(mbs.GetSensorStoredData(sn))
    t = data(sens[0][0])[:, 0]
    E = np.zeros_like(t)
    for (sp, sv, sw), m, J in zip(sens, masses, inertias):
        pos, vel, om = data(sp)[:, 1:], data(sv)[:, 1:], data(sw)[:, 1:]
        E += 0.5 * m * np.sum(vel ** 2, axis=1) + 0.5 * np.einsum("ki,ij,kj->k", om, J, om) + m * 9.81 * pos[:, 2]
    drift = 0.0
    for b, r in ((bR, rR), (bF, rF)):
        centre = data(sens[bodies.index(b)][0])[:, 1:]
        axis = data(sRot[b])[:, 1:].reshape(-1, 3, 3)[:, :, 0]        # the wheel axis: local x
        drift = max(drift, float(np.max(np.abs(centre[:, 2] - r * np.sqrt(1.0 - axis[:, 2] ** 2)))))
    for a, b in joints:
        drift = max(drift, float(np.max(np.abs(data(a)[:, 1:] - data(b)[:, 1:]))))
    return {"peer": "exudyn", "version": exu.__version__, "maneuver": maneuver, "h": h, "t_final": t_final,
            "metric": metric(E), "cpu_s": cpu, "setup_s": setup, "drift": drift, "steps": int(round(t_final / h)),
            "t": t.tolist(), "roll": data(sRotB)[:, 1].tolist(), "roll_rate": data(sOmegaB)[:, 1].tolist(),
            "steer": (-data(sSteer)[:, 3]).tolist(), "steer_rate": (-data(sSteerVel)[:, 3]).tolist(),
            "speed": data(sRearHub)[:, 1].tolist(), "E": E.tolist()}


# --- PyDy / SymPy -------------------------------------------------------------------------------

def _sympy_bicycle():
    path = Path(__file__).resolve().parents[1] / "tests" / "unit" / "test_sympy_models.py"
    spec = importlib.util.spec_from_file_location("sympy_models_test", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _cpu_with_children():
    """CPU seconds of this process and its waited-for children (PyDy compiles with gcc in a child)."""
    import os
    t = os.times()
    return t.user + t.system + t.children_user + t.children_system


def pydy_setup():
    """SymPy's Whipple bicycle (test_kane3) with its gravity loads, Kane's equations, and PyDy's
    Cython right-hand side of the full form M(q) (q̇, u̇) = F(q, u) (kinematic, dynamic and the
    dependent speeds' constraint rows). Returns a dict: rhs, helpers, setup_cpu_s (CPU of this
    process and of the compiler it runs), setup_wall_s."""
    try:
        import pydy  # noqa: F401
        import sympy as sm
        from pydy.codegen.ode_function_generators import generate_ode_function
    except ImportError as e:
        return {"missing": e.name or "pydy"}
    c0, w0 = _cpu_with_children(), time.perf_counter()
    mod = _sympy_bicycle()
    km, values, V = mod.whipple_bicycle()
    N = km._inertial
    g = next(s for s in values if s.name == "g")
    loads = [(b.masscenter, -b.mass * g * N.z) for b in km.bodies]
    km.kanes_equations(km.bodies, loads)
    q, u = list(km.q), list(km.u)
    consts = list(values)
    rhs = generate_ode_function(km.forcing_full, q, u, consts, mass_matrix=km.mass_matrix_full,
                                generator="cython", constants_arg_type="array", linear_sys_solver="numpy")
    t_sym = sm.Symbol("t")
    subs_dyn = {x: sm.Symbol(f"x{i}") for i, x in enumerate(q + u)}
    xs = [subs_dyn[x] for x in q + u]
    T = sum(b.kinetic_energy(N) for b in km.bodies)
    energy = sm.lambdify([xs, consts], (T + V).xreplace(subs_dyn), "numpy")
    # the velocity constraints (front contact velocity in Y.x, Y.y, Y.z) for the dependent speeds
    vc = sm.Matrix(km._k_dnh) * sm.Matrix(u) + sm.Matrix(km._f_dnh)
    A = vc.jacobian(u)
    A_fn = sm.lambdify([xs, consts], A.xreplace(subs_dyn), "numpy")
    phi = sm.lambdify([xs, consts], sm.Matrix(km._f_h).xreplace(subs_dyn)[0] if km._f_h else 0.0, "numpy")
    setup = (_cpu_with_children() - c0, time.perf_counter() - w0)
    return {"rhs": rhs, "q": q, "u": u, "consts": consts, "values": np.array([float(values[c]) for c in consts]),
            "energy": energy, "A": A_fn, "phi": phi, "t": t_sym, "setup_cpu_s": setup[0], "setup_wall_s": setup[1],
            "R_REAR": mod.R_REAR, "R_FRONT": mod.R_FRONT}


def pydy_state(m, speed, roll_rate):
    """Upright, zero pitch (φ = 0 there in test_kane3's geometry), rear wheel rate speed/r_R and
    roll rate as the independent speeds (u2, u3, u5); the dependent (u1, u4, u6) from the
    velocity constraints."""
    names = [str(x.func) if hasattr(x, "func") else str(x) for x in m["q"] + m["u"]]
    nq = len(m["q"])
    x = np.zeros(nq + len(m["u"]))
    x[names.index("u2")] = roll_rate
    x[names.index("u3")] = speed / m["R_REAR"]
    A = np.asarray(m["A"](x, m["values"]), float)
    ind = [i for i, s in enumerate(m["u"]) if str(s.func) in ("u2", "u3", "u5")]
    dep = [i for i in range(len(m["u"])) if i not in ind]
    x[[nq + i for i in dep]] = np.linalg.solve(A[:, dep], -A[:, ind] @ x[[nq + i for i in ind]])
    return x, names


def pydy_run(maneuver="M2", rtol=1e-10, t_final=20.0, m=None, method="DOP853"):
    """solve_ivp (``method``, rtol = atol = ``rtol``) of the PyDy right-hand side for ``t_final``
    s; the energy metric over the solver's own steps; CPU time of solve_ivp alone."""
    from scipy.integrate import solve_ivp
    if m is None:
        m = pydy_setup()
        if "missing" in m:
            return m
    speed, roll_rate = MANEUVERS[maneuver]
    x0, names = pydy_state(m, speed, roll_rate)
    p = m["values"]
    f = m["rhs"]
    c0 = time.process_time()
    sol = solve_ivp(lambda t, x: f(x, t, p), (0.0, t_final), x0, method=method, rtol=rtol, atol=rtol)
    cpu = time.process_time() - c0
    X = sol.y.T
    E = np.array([m["energy"](x, p) for x in X])
    # the same steps again with the solver's dense output (untimed), the energy every 0.01 s: the
    # metric between the (few, long) steps as well
    dense = solve_ivp(lambda t, x: f(x, t, p), (0.0, t_final), x0, method=method, rtol=rtol, atol=rtol,
                      dense_output=True).sol(np.linspace(0.0, t_final, int(round(t_final / 0.01)) + 1)).T
    E_dense = np.array([m["energy"](x, p) for x in dense])
    phi = np.array([m["phi"](x, p) for x in X], float)
    u3 = X[:, names.index("u3")]
    return {"peer": "pydy", "maneuver": maneuver, "rtol": rtol, "method": method, "t_final": t_final,
            "metric": metric(E), "metric_dense": metric(E_dense), "cpu_s": cpu, "setup_s": m["setup_cpu_s"], "setup_wall_s": m["setup_wall_s"],
            "drift": float(np.max(np.abs(phi))), "steps": int(len(sol.t) - 1), "nfev": int(sol.nfev),
            "t": sol.t.tolist(), "roll": X[:, names.index("q2")].tolist(),
            "roll_rate": X[:, names.index("u2")].tolist(), "steer": X[:, names.index("q5")].tolist(),
            "steer_rate": X[:, names.index("u5")].tolist(), "speed": (u3 * m["R_REAR"]).tolist(), "E": E.tolist()}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("peer", choices=("exudyn", "pydy"))
    ap.add_argument("--maneuver", default="M2", choices=sorted(MANEUVERS))
    ap.add_argument("--h", type=float, nargs="*", default=[0.014])
    ap.add_argument("--rtol", type=float, nargs="*", default=[1e-10])
    ap.add_argument("--t-final", type=float, default=20.0)
    ap.add_argument("--series", action="store_true", help="keep the time series in the JSON")
    a = ap.parse_args(argv)
    series = ("t", "roll", "roll_rate", "steer", "steer_rate", "speed", "E")
    if a.peer == "exudyn":
        runs = [exudyn_run(a.maneuver, h, a.t_final) for h in a.h]
    else:
        m = pydy_setup()
        runs = [m] if "missing" in m else [pydy_run(a.maneuver, r, a.t_final, m) for r in a.rtol]
    for r in runs:
        print(json.dumps(r if a.series else {k: v for k, v in r.items() if k not in series}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
