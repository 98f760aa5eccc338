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

    python benchmarks/iftomm_peers.py trajectories [--save benchmarks/results/iftomm_trajectories.npz]
        [--plot FILE.png] [--t-final 5]

runs the three manoeuvres in dalembert (its index-1 ODE by DOP853 at rtol 1e-10 … 1e-13, and
gonzalez-f with node projection at h = 5e-3 and 1e-3), PyDy (DOP853, rtol 1e-8 … 1e-13) and Exudyn
(h = 1e-2 … 2e-5, Newton's tolerance 1e-12, and its default 1e-8 at 2e-5), all from the same
state (upright, straight, steer rate 0, the rear hub's forward speed and the roll rate given), and
prints a Markdown table of the largest roll and steer differences (rad) from dalembert's model
over the run (:func:`trajectories`; docs/benchmarks.md). About 4 min CPU, most of it Exudyn at
h = 2e-5 and the first compile of dalembert's steps.
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

def exudyn_run(maneuver="M2", h=0.014, t_final=20.0, newton_tol=None):
    """Exudyn's IFToMM bicycle (the example script's model and solver settings, graphics and file
    output off, sensors stored in memory at every step) for ``t_final`` s at step ``h``; with
    ``newton_tol`` Newton's relative tolerance (Exudyn's default 1e-8) set to it and the absolute
    one to 1e-2 of it. Returns a dict: metric (%), cpu_s (SolveDynamic only), setup_s, drift (m),
    t, roll, steer (Exudyn's sensors: Tait–Bryan roll of the frame, the steer joint's rotation
    negated), roll_meijaard, steer_meijaard (:func:`_exudyn_roll_steer`), E arrays."""
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
    sRot = {b: sensor(b, OV.RotationMatrix) for b in (bB, bH, bR, bF)}
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
    if newton_tol is not None:
        s.timeIntegration.newton.relativeTolerance = newton_tol
        s.timeIntegration.newton.absoluteTolerance = 1e-2 * newton_tol
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
    roll_m, steer_m = _exudyn_roll_steer(data(sRot[bB])[:, 1:], data(sRot[bH])[:, 1:], lam)
    return {"peer": "exudyn", "version": exu.__version__, "maneuver": maneuver, "h": h, "t_final": t_final,
            "metric": metric(E), "cpu_s": cpu, "setup_s": setup, "drift": drift, "steps": int(round(t_final / h)),
            "t": t.tolist(), "roll": data(sRotB)[:, 1].tolist(), "roll_rate": data(sOmegaB)[:, 1].tolist(),
            "steer": (-data(sSteer)[:, 3]).tolist(), "steer_rate": (-data(sSteerVel)[:, 3]).tolist(),
            "speed": data(sRearHub)[:, 1].tolist(), "E": E.tolist(),
            "roll_meijaard": roll_m.tolist(), "steer_meijaard": steer_m.tolist()}


def _exudyn_roll_steer(AB, AH, lam):
    """Meijaard's roll and steer angles (rad) from Exudyn's rotation matrices (N, 9) (row-major,
    body to global) of the rear frame B and the fork H. Exudyn's model has z up and y to the left
    (x forward), B's body axes parallel to the global ones in the reference configuration.
    Meijaard's rear frame is R_z(ψ) R_x(φ) R_y(θ) (z down, y right), so its lateral axis has the
    downward component sin φ; in Exudyn's axes the left axis' upward component is the same
    number: φ = asin(A_B[2, 1]). The steer δ is the fork's rotation relative to the frame about
    the steer axis pointing down, (sin λ, 0, −cos λ) in B's axes (Meijaard: positive turns the
    front to the right): with R = A_Bᵀ A_H, sin δ = s·vee(R − Rᵀ)/2, cos δ = (tr R − 1)/2."""
    AB, AH = np.asarray(AB).reshape(-1, 3, 3), np.asarray(AH).reshape(-1, 3, 3)
    roll = np.arcsin(AB[:, 2, 1])
    R = np.einsum("kji,kjl->kil", AB, AH)
    s = np.array([np.sin(lam), 0.0, -np.cos(lam)])
    vee = 0.5 * np.stack([R[:, 2, 1] - R[:, 1, 2], R[:, 0, 2] - R[:, 2, 0], R[:, 1, 0] - R[:, 0, 1]], axis=1)
    steer = np.arctan2(vee @ s, 0.5 * (np.trace(R, axis1=1, axis2=2) - 1.0))
    return roll, steer


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


# --- trajectories of the three codes -------------------------------------------------------------

def pydy_trajectory(m, maneuver, rtol, t):
    """PyDy's roll q2 and steer q5 (rad) at the times ``t`` (solve_ivp DOP853, rtol = atol =
    ``rtol``, ``t_eval``). SymPy's axes are x forward, y left, z up; q2 (roll of R about Y.x) and
    q5 (steer about the frame's x axis, the steer axis pointing forward-down) have Meijaard's signs
    (docs/sympy.md: the two models agree under the half turn about x). Returns (roll, steer, info)."""
    from scipy.integrate import solve_ivp
    x0, names = pydy_state(m, *MANEUVERS[maneuver])
    p, f = m["values"], m["rhs"]
    c0 = time.process_time()
    sol = solve_ivp(lambda tt, x: f(x, tt, p), (t[0], t[-1]), x0, method="DOP853", rtol=rtol, atol=rtol,
                    t_eval=t)
    X = sol.y.T
    return X[:, names.index("q2")], X[:, names.index("q5")], {"cpu_s": time.process_time() - c0,
                                                              "nfev": int(sol.nfev)}


def exudyn_trajectory(maneuver, h, t, newton_tol=None):
    """Exudyn's roll and steer in Meijaard's conventions (:func:`_exudyn_roll_steer`, from the
    rotation matrices of the frame and the fork) at the times ``t`` (multiples of ``h``: the
    sensors store every step); ``newton_tol`` as for :func:`exudyn_run`. Returns (roll, steer,
    info) or None when Exudyn is missing."""
    r = exudyn_run(maneuver, h, float(t[-1]), newton_tol)
    if "missing" in r:
        return None
    te = np.asarray(r["t"])
    idx = np.clip(np.searchsorted(te, t - 0.5 * h), 0, len(te) - 1)
    if np.max(np.abs(te[idx] - t)) > 1e-9:
        raise ValueError(f"exudyn: h = {h} does not divide the output step; give an h that does")
    def gap(a, b):
        return float(np.max(np.abs(np.asarray(r[a]) - np.asarray(r[b]))))
    return (np.asarray(r["roll_meijaard"])[idx], np.asarray(r["steer_meijaard"])[idx],
            {"cpu_s": r["cpu_s"], "roll_sensor_vs_meijaard": gap("roll", "roll_meijaard"),
             "steer_sensor_vs_meijaard": gap("steer", "steer_meijaard")})


def dalembert_trajectory(maneuver, t, *, rtol=None, method=None, h=None):
    """dalembert's built-in ``whipple-bicycle`` (Meijaard's axes, roll and steer coordinates) from
    ``upright_state`` (rear-hub speed, roll rate; the other speeds from the constraints): with
    ``rtol`` the model's index-1 ODE by SciPy DOP853 (``dalembert.systems.index1_ode.
    reference_solution``, rtol = atol), else ``method`` (the experiment's, e.g. gonzalez-f with
    node projection) at step ``h`` (``t`` on its nodes). Returns (roll, steer, info)."""
    import dalembert as dl
    from dalembert.experiments.iftomm_bicycle import OPTIONS, bicycle
    from dalembert.systems.index1_ode import reference_solution
    bike = bicycle()
    q0, v0 = bike.upright_state(*MANEUVERS[maneuver])
    c0 = time.process_time()
    if rtol is not None:
        q, _, sol = reference_solution(bike.system, q0, v0, t, rtol=rtol, atol=rtol)
        info = {"nfev": int(sol.nfev)}
    else:
        tr = dl.integrate(bike.system, method, q0=q0, v0=v0, h=h, t_final=float(t[-1]), progress=False,
                          **OPTIONS.get(method, {}))
        tq = np.asarray(tr.t)
        idx = np.clip(np.searchsorted(tq, t - 0.5 * h), 0, len(tq) - 1)
        if np.max(np.abs(tq[idx] - t)) > 1e-9:
            raise ValueError(f"dalembert: h = {h} does not divide the output step")
        q = np.asarray(tr.q)[idx]
        info = {}
    info["cpu_s"] = time.process_time() - c0       # the first call of a method includes its compile
    return q[:, bike.roll], q[:, bike.steer], info


#: Exudyn's runs in :func:`trajectories`: (h, Newton's relative tolerance; None: Exudyn's 1e-8)
EXUDYN_RUNS = ((1e-2, 1e-12), (1e-3, 1e-12), (1e-4, 1e-12), (2e-5, 1e-12), (2e-5, None))


def trajectories(maneuvers=tuple(MANEUVERS), t_final=5.0, dt=0.01, exudyn_runs=EXUDYN_RUNS,
                 pydy_rtols=(1e-8, 1e-10, 1e-12, 1e-13), ref_rtols=(1e-10, 1e-12, 1e-13), gonzalez_hs=(5e-3, 1e-3),
                 save=None, log=print):
    """Roll and steer (rad) of the three codes over ``t_final`` s of each manoeuvre on the grid
    0, dt, …, and the largest differences from dalembert's model (its index-1 ODE by DOP853 at the
    smallest of ``ref_rtols``). Exudyn's two smallest steps at the tight Newton tolerance are also
    combined by Richardson extrapolation for its second order, (r² x(h₂) − x(h₁))/(r² − 1),
    r = h₁/h₂: what is left of the difference then is not Exudyn's step. Rows: dicts (manoeuvre,
    code, setting, roll_diff, steer_diff (rad), cpu_s, …). ``save``: an .npz path for the series
    (keys "t" and "<manoeuvre>/<code> <setting>/roll|steer")."""
    t = np.linspace(0.0, t_final, int(round(t_final / dt)) + 1)
    m = pydy_setup()
    series, rows = {"t": t}, []
    for man in maneuvers:
        runs = {}
        for r in sorted(ref_rtols, reverse=True):
            runs[("dalembert", f"DOP853 rtol {r:g}")] = dalembert_trajectory(man, t, rtol=r)
        for h in gonzalez_hs:
            runs[("dalembert", f"gonzalez-f h {h:g}")] = dalembert_trajectory(man, t, method="gonzalez-f", h=h)
        if "missing" not in m:
            for r in pydy_rtols:
                runs[("pydy", f"DOP853 rtol {r:g}")] = pydy_trajectory(m, man, r, t)
        tight = []
        for h, tol in exudyn_runs:
            out = exudyn_trajectory(man, h, t, tol)
            if out is not None:
                name = f"TrapezoidalIndex2 h {h:g}, Newton tol " + (f"{tol:g}" if tol else "1e-8 (default)")
                runs[("exudyn", name)] = out
                if tol:
                    tight.append((h, out))
        if len(tight) >= 2:
            (h1, a), (h2, b) = sorted(tight)[:2][::-1]          # the two smallest steps, h1 > h2
            r2 = (h1 / h2) ** 2
            runs[("exudyn", f"Richardson h {h1:g}, {h2:g}")] = tuple((r2 * y - x) / (r2 - 1.0)
                                                                     for x, y in zip(a[:2], b[:2])) + ({"cpu_s": 0.0},)
        ref = runs[("dalembert", f"DOP853 rtol {min(ref_rtols):g}")]
        for (code, setting), (roll, steer, info) in runs.items():
            row = {"maneuver": man, "code": code, "setting": setting,
                   "roll_diff": float(np.max(np.abs(roll - ref[0]))),
                   "steer_diff": float(np.max(np.abs(steer - ref[1]))),
                   "max_roll": float(np.max(np.abs(roll))), "max_steer": float(np.max(np.abs(steer))), **info}
            rows.append(row)
            log(json.dumps(row))
            series[f"{man}/{code} {setting}/roll"], series[f"{man}/{code} {setting}/steer"] = roll, steer
    if save is not None:
        Path(save).parent.mkdir(parents=True, exist_ok=True)
        np.savez_compressed(save, **series)
    return rows, series


def plot_trajectories(series, path):
    """Roll and steer against time of each manoeuvre, one line per code (its finest setting),
    and the differences from dalembert's model (log scale), as a PNG at ``path``."""
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    t = series["t"]
    mans = sorted({k.split("/")[0] for k in series if "/" in k})
    fig, axes = plt.subplots(2, len(mans), figsize=(5 * len(mans), 7), squeeze=False)
    for j, man in enumerate(mans):
        keys = sorted({k.split("/")[1] for k in series if k.startswith(man + "/")})
        ref = min((k for k in keys if k.startswith("dalembert DOP853")), key=lambda k: float(k.split()[-1]))

        def diff(k):
            return max(np.max(np.abs(series[f"{man}/{k}/{q}"] - series[f"{man}/{ref}/{q}"])) for q in ("roll", "steer"))
        finest = {}                       # per code the run closest to dalembert's model
        for k in keys:
            code = k.split()[0]
            if k != ref and "Richardson" not in k and (code not in finest or diff(k) < diff(finest[code])):
                finest[code] = k
        ax, axd = axes[0][j], axes[1][j]
        for i, (q, ls) in enumerate((("roll", "-"), ("steer", "--"))):
            ax.plot(t, series[f"{man}/{ref}/{q}"], ls, color="k", lw=1.2, label=f"{q}, {ref}")
            for c, k in enumerate(finest.values()):
                ax.plot(t, series[f"{man}/{k}/{q}"], ls, color=f"C{c}", lw=0.8, alpha=0.8, label=f"{q}, {k}")
                axd.semilogy(t[1:], np.abs(series[f"{man}/{k}/{q}"] - series[f"{man}/{ref}/{q}"])[1:] + 1e-18, ls,
                             color=f"C{c}", lw=0.8, label=f"|Δ{q}|, {k}")
        ax.set_title(f"{man} ({MANEUVERS[man][0]} m/s, roll rate {MANEUVERS[man][1]} rad/s)")
        ax.set_xlabel("t (s)")
        ax.set_ylabel("roll, steer (rad)")
        ax.legend(fontsize=6)
        axd.set_xlabel("t (s)")
        axd.set_ylabel("difference from dalembert (rad)")
        axd.legend(fontsize=6)
    fig.suptitle("IFToMM uncontrolled bicycle: roll and steer of dalembert, PyDy and Exudyn")
    fig.tight_layout()
    fig.savefig(path, dpi=110)


def _print_table(rows, out=print):
    out("| manoeuvre | code | setting | max \\|Δroll\\| (rad) | max \\|Δsteer\\| (rad) | CPU s |")
    out("|---|---|---|---|---|---|")
    for r in rows:
        out(f"| {r['maneuver']} | {r['code']} | {r['setting']} | {r['roll_diff']:.1e} | {r['steer_diff']:.1e} | "
            f"{r['cpu_s']:.3f} |")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("peer", choices=("exudyn", "pydy", "trajectories"))
    ap.add_argument("--maneuver", default="M2", choices=sorted(MANEUVERS))
    ap.add_argument("--h", type=float, nargs="*", default=[0.014])
    ap.add_argument("--rtol", type=float, nargs="*", default=[1e-10])
    ap.add_argument("--t-final", type=float, default=None, help="s (default 20; trajectories: 5)")
    ap.add_argument("--series", action="store_true", help="keep the time series in the JSON")
    ap.add_argument("--save", default=None, help="trajectories: .npz file for the roll and steer series")
    ap.add_argument("--plot", default=None, help="trajectories: PNG file for the figure")
    a = ap.parse_args(argv)
    if a.peer == "trajectories":
        rows, series = trajectories(t_final=5.0 if a.t_final is None else a.t_final, save=a.save)
        _print_table(rows)
        if a.plot:
            plot_trajectories(series, a.plot)
        return 0
    series = ("t", "roll", "roll_rate", "steer", "steer_rate", "speed", "E", "roll_meijaard", "steer_meijaard")
    a.t_final = 20.0 if a.t_final is None else a.t_final
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
