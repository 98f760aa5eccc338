"""The built-in models with configuration constraints against independent formulations written here.

``tilting-disk-centre`` (the tilting disk in centre coordinates, its height z_c = r cos ϑ a
configuration constraint) against the ``tilting-disk`` model (contact-point coordinates, no
configuration constraint), mapped to the centre by the formula below; ``sleigh-pendulum`` (the bob in
Cartesian coordinates, the rod's length a configuration constraint) against a minimal-coordinate
system (x, y, θ, α) whose metric is built here from the bodies' positions by automatic
differentiation. Checked: the energies of the two formulations at the same physical states, the
fitted order of the error at a fixed time against the other formulation's DOP853 reference, φ at
round-off at every node, energy bounded over a long run, and each model's ``reference`` against the
generic index-1 reference of its own system."""
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import dalembert as dl

RNG = np.random.default_rng(20261128)


def _order(hs, errs):
    return np.polyfit(np.log(hs), np.log(errs), 1)[0]


# --- tilting-disk-centre ------------------------------------------------------------------------

def contact_to_centre(qc, vc, r):
    """The centre state (…, 6) of tilting-disk states (…, 5): C = contact + r L_z with
    L_z = R_z(ψ) R_x(ϑ) e_z = (sin ψ sin ϑ, −cos ψ sin ϑ, cos ϑ), and its time derivative."""
    psi, th, x, y = qc[..., 0], qc[..., 1], qc[..., 3], qc[..., 4]
    dpsi, dth = vc[..., 0], vc[..., 1]
    s1, c1, s2, c2 = np.sin(psi), np.cos(psi), np.sin(th), np.cos(th)
    Lz = np.stack([s1 * s2, -c1 * s2, c2], -1)
    dLz = np.stack([c1 * s2 * dpsi + s1 * c2 * dth, s1 * s2 * dpsi - c1 * c2 * dth, -s2 * dth], -1)
    q = np.concatenate([qc[..., :3], np.stack([x, y, np.zeros_like(x)], -1) + r * Lz], -1)
    v = np.concatenate([vc[..., :3], np.stack([vc[..., 3], vc[..., 4], np.zeros_like(x)], -1) + r * dLz], -1)
    return q, v


def disk_state(contact, psi=0.0, th=0.2, yaw_rate=0.5, lean_rate=0.0, spin_rate=6.0, x=0.0, y=0.0):
    """A tilting-disk state (q, q̇) (5,) with the contact velocity its rolling constraint requires."""
    q = np.array([psi, th, 0.3 * psi, x, y])
    mu = np.asarray(contact.constraint_matrix(jnp.asarray(q)))
    w = np.array([yaw_rate, lean_rate, spin_rate])
    return q, np.concatenate([w, -mu[:, :3] @ w])


def test_disk_centre_is_the_tilting_disk_in_other_coordinates():
    """At the default state and three random ones (angles in (−1, 1) rad, rates in (−5, 5) rad/s),
    mapped from the tilting disk by the formula above: φ = 0 and (Φ; μ) v = 0 to round-off, the
    same kinetic energy (two metrics written differently) to 1e-14 relative and the same
    potential, and the model's default state is the tilting disk's default state mapped."""
    cen, con = dl.models.get("tilting-disk-centre"), dl.models.get("tilting-disk")
    r = cen.params["r"]
    q, v = contact_to_centre(con.q0, con.v0, r)
    assert np.max(np.abs(q - cen.q0)) <= 1e-15 and np.max(np.abs(v - cen.v0)) <= 1e-14
    scale = np.array([1.0, 1.0, 5.0, 5.0, 5.0])
    states = [(con.q0, con.v0)] + [disk_state(con.system, *(scale * RNG.uniform(-1.0, 1.0, 5)), x=1.0, y=-2.0)
                                   for _ in range(3)]
    for qc, vc in states:
        q, v = contact_to_centre(qc, vc, r)
        assert abs(float(cen.system.holonomic(q)[0])) <= 1e-15                           # measured 0
        assert np.max(np.abs(np.asarray(cen.system.constraint_residual(q, v)))) <= 1e-14  # measured 0
        v_cen, v_con = float(cen.system.potential(q)), float(con.system.potential(qc))
        k_cen, k_con = float(cen.system.energy(q, v)) - v_cen, float(con.system.energy(qc, vc)) - v_con
        assert abs(v_cen - v_con) <= 1e-15 * abs(v_con)
        assert abs(k_cen - k_con) <= 1e-14 * abs(k_con), (k_cen, k_con)                   # measured 0
    # a negative control: the centre disk with 1 % more mass has 1 % more kinetic energy
    heavy = dl.models.get("tilting-disk-centre", m=1.01).system
    k_heavy = float(heavy.energy(q, v) - heavy.potential(q))
    assert abs(k_heavy / k_con - 1.01) <= 1e-12, (k_heavy, k_con)


@pytest.fixture(scope="module")
def disk_reference():
    """The centre state at t = T from the tilting disk's DOP853 reference, mapped here."""
    con = dl.models.get("tilting-disk")
    T = 1.2
    tr = dl.integrate(con.system, "reference", q0=con.q0, v0=con.v0, h=T / 2, t_final=T, progress=False)
    q, _ = contact_to_centre(tr.q[-1], tr.v[-1], con.params["r"])
    return T, q


@pytest.mark.full          # 15–30 s of compilation; conformance fits every method on this model against the
def test_disk_centre_order_against_the_tilting_disk(disk_reference):    # tilting disk's reference too
    """The default method nh-rattle-4 at h = 0.04, 0.02, 0.01: fitted order 4 ± 0.3 against the
    tilting disk's reference (measured 3.98: errors 5.4e-5, 3.5e-6, 2.2e-7); |φ| at round-off at
    every node and the rolling rows too; the energy error shrinks like h⁴ (3.98)."""
    cen = dl.models.get("tilting-disk-centre")
    T, target = disk_reference
    hs = (0.04, 0.02, 0.01)
    errs, energy = [], []
    for h in hs:
        tr = dl.integrate(cen.system, "nh-rattle-4", q0=cen.q0, v0=cen.v0, h=h, t_final=T, progress=False)
        errs.append(np.max(np.abs(tr.q[-1] - target)))
        energy.append(tr.max_relative_energy_error)
        assert tr.holonomic_residual.shape == (len(tr.t), 1)
        assert tr.max_holonomic_residual <= 1e-15                     # measured 5.6e-17
        assert tr.max_constraint_residual <= 5e-13                    # measured ≤ 8.7e-14 (|v| ≈ 6)
    assert abs(_order(hs, errs) - 4) <= 0.3, errs
    assert abs(_order(hs, energy) - 4) <= 0.3, energy


def test_disk_centre_reference_is_the_index1_reference_of_its_own_system():
    """``Model.reference`` (the tilting-disk ODE mapped) equals the index-1 ODE of the centre system
    itself (a saddle-point system with Φ differentiated twice) to 1e-11 at t = 1, over a motion
    that moves every coordinate but the height by more than 0.1."""
    cen = dl.models.get("tilting-disk-centre")
    t = np.array([0.0, 1.0])
    own = cen.system.reference_solution(cen.q0, cen.v0, t=t)
    mapped = cen.reference(t, cen.q0, cen.v0)
    assert np.max(np.abs(own["q"][-1] - mapped["q"][-1])) <= 1e-11              # measured 6.7e-14
    assert np.max(np.abs(own["v"][-1] - mapped["v"][-1])) <= 1e-11              # measured 7.3e-14
    moved = np.abs(mapped["q"][-1] - cen.q0)
    assert np.all(moved[:5] > 0.1), moved                     # ≥ 0.16 (the height: 0.022)


# --- sleigh-pendulum ----------------------------------------------------------------------------

def minimal_sleigh_pendulum(p):
    """s = (x, y, θ, α): T = ½ M |ṙ_G|² + ½ J θ̇² + ½ m_b |Ḃ|² with r_G = (x, y) + a e,
    B = (x, y) + d e − ℓ (cos(θ + α), sin(θ + α)); G(s) = Σ mass · JᵀJ of the positions' Jacobians
    (jax.jacfwd), V = κ (1 − cos α), the blade −ẋ sin θ + ẏ cos θ = 0."""
    M, J, a, d, mb, l, kappa = (p[k] for k in ("M", "J", "a", "d", "m_b", "l", "kappa"))

    def com(s):
        return jnp.stack([s[0] + a * jnp.cos(s[2]), s[1] + a * jnp.sin(s[2])])

    def bob(s):
        return jnp.stack([s[0] + d * jnp.cos(s[2]) - l * jnp.cos(s[2] + s[3]),
                          s[1] + d * jnp.sin(s[2]) - l * jnp.sin(s[2] + s[3])])

    def metric(s):
        Jg, Jb = jax.jacfwd(com)(s), jax.jacfwd(bob)(s)
        return M * Jg.T @ Jg + mb * Jb.T @ Jb + J * jnp.diag(jnp.array([0.0, 0.0, 1.0, 0.0]))

    system = dl.NonholonomicSystem(
        mass_matrix=metric, potential=lambda s: kappa * (1.0 - jnp.cos(s[3])),
        constraint_matrix=lambda s: jnp.stack([-jnp.sin(s[2]), jnp.cos(s[2]), 0.0 * s[2], 0.0 * s[2]])[None],
        name="sleigh-pendulum-minimal-test")

    def to_q(s, sdot):
        b, bdot = jax.jvp(bob, (jnp.asarray(s),), (jnp.asarray(sdot),))
        return np.concatenate([s[:3], np.asarray(b)]), np.concatenate([sdot[:3], np.asarray(bdot)])
    return system, to_q


def minimal_state(u=0.0, w=0.0, alpha=1.0, alpha_rate=0.0, theta=0.0, x=0.0, y=0.0):
    return (np.array([x, y, theta, alpha]),
            np.array([u * np.cos(theta), u * np.sin(theta), w, alpha_rate]))


def test_sleigh_pendulum_is_the_minimal_system_in_other_coordinates():
    """At the default state and three random ones of the minimal system, mapped to the bob's
    Cartesian coordinates: φ = 0 and (Φ; μ) v = 0 to round-off, the same energy to 1e-14
    relative, and the model's default state is the minimal default (at rest, α = 1) mapped."""
    mdl = dl.models.get("sleigh-pendulum")
    minimal, to_q = minimal_sleigh_pendulum(mdl.params)
    q, v = to_q(*minimal_state())
    assert np.max(np.abs(q - mdl.q0)) <= 1e-15 and np.max(np.abs(v - mdl.v0)) <= 1e-15
    for s, sd in [minimal_state()] + [minimal_state(*RNG.uniform(-1.0, 1.0, 5)) for _ in range(3)]:
        q, v = to_q(s, sd)
        assert abs(float(mdl.system.holonomic(q)[0])) <= 1e-15
        assert np.max(np.abs(np.asarray(mdl.system.constraint_residual(q, v)))) <= 1e-15
        e_q, e_s = float(mdl.system.energy(q, v)), float(minimal.energy(s, sd))
        assert abs(e_q - e_s) <= 1e-14 * abs(e_s), (e_q, e_s)


@pytest.fixture(scope="module")
def pendulum_reference():
    """(T, q(T)) of the minimal system's DOP853 reference from the default state, mapped."""
    mdl = dl.models.get("sleigh-pendulum")
    minimal, to_q = minimal_sleigh_pendulum(mdl.params)
    T = 2.0
    s0, sd0 = minimal_state()
    tr = dl.integrate(minimal, "reference", q0=s0, v0=sd0, h=T / 2, t_final=T, progress=False)
    return T, to_q(tr.q[-1], tr.v[-1])[0]


@pytest.mark.full  # CI budget (2026-12-07): in the full suite
def test_sleigh_pendulum_order_against_the_minimal_system(pendulum_reference):
    """nh-rattle-sym at h = 0.04, 0.02, 0.01: fitted order 2 ± 0.15 against the minimal system's
    reference; |φ| and the velocity constraints at round-off at every node. The swing drives the
    sleigh (it starts at rest): x(T) ≥ 0.05 m in the reference."""
    mdl = dl.models.get("sleigh-pendulum")
    T, target = pendulum_reference
    assert target[0] >= 0.05, target                                 # measured 0.164
    hs = (0.04, 0.02, 0.01)
    errs = []
    for h in hs:
        tr = dl.integrate(mdl.system, "nh-rattle-sym", q0=mdl.q0, v0=mdl.v0, h=h, t_final=T, progress=False)
        errs.append(np.max(np.abs(tr.q[-1] - target)))
        assert tr.max_holonomic_residual <= 1e-15                     # measured ≤ 1.7e-16
        assert tr.max_constraint_residual <= 1e-13                    # measured ≤ 5.4e-15
    assert abs(_order(hs, errs) - 2) <= 0.15, errs                   # 2.00: 2.3e-3, 5.6e-4, 1.4e-4


def test_sleigh_pendulum_long_run_energy_bounded():
    """5·10⁴ steps of nh-rattle-sym (h = 0.01, t = 500): φ at round-off at every node relative to
    the size of q (the sleigh travels ~100 m: φ = (|B − P|² − ℓ²)/(2ℓ) loses the digits of B and
    P), the energy error bounded without drift (the second half's maximum not above 1.25 × the
    first's)."""
    mdl = dl.models.get("sleigh-pendulum")
    tr = dl.integrate(mdl.system, "nh-rattle-sym", q0=mdl.q0, v0=mdl.v0, h=0.01, t_final=500.0, save_every=10,
                      progress=False)
    scale = float(np.max(np.abs(tr.q)))
    assert scale > 10.0                                               # measured 167 m
    assert tr.max_holonomic_residual <= 1e-15 * scale                 # measured 2.7e-14 = 1.6e-16 · scale
    assert tr.max_constraint_residual <= 1e-13 * scale                # measured 2.7e-12 = 1.6e-14 · scale
    e = np.abs(tr.energy - tr.energy[0]) / abs(tr.energy[0])
    half = len(e) // 2
    assert e.max() < 1e-3 and e[half:].max() <= 1.25 * e[:half].max(), (e[:half].max(), e[half:].max())
    # (measured 2.79e-4 in the first half, 2.77e-4 in the second)


def test_sleigh_pendulum_reference_is_the_index1_reference_of_its_own_system():
    """``Model.reference`` (the model's own minimal-coordinate ODE, mapped) equals the index-1 ODE
    of the Cartesian system to 1e-11 at t = 2, from a state other than the default."""
    from dalembert.models.sleigh_pendulum import initial_state
    mdl = dl.models.get("sleigh-pendulum")
    q0, v0 = initial_state(mdl.params, alpha=-0.5, speed=0.4, yaw_rate=0.3, alpha_rate=1.0, theta=0.8)
    t = np.array([0.0, 2.0])
    own = mdl.system.reference_solution(q0, v0, t=t)
    mapped = mdl.reference(t, q0, v0)
    assert np.max(np.abs(own["q"][-1] - mapped["q"][-1])) <= 1e-11
    assert np.max(np.abs(own["v"][-1] - mapped["v"][-1])) <= 1e-11
