"""Runs that end where asked and never lose work (issue 14): exact end times with a partial last
node, checks at every step, checkpoints and resume (bit for bit), interrupts, ensembles that keep
their healthy members, and the memory bound."""
import warnings

import jax.numpy as jnp
import numpy as np
import pytest

import dalembert as dl
from dalembert.engine import checkpoint as ckpt_mod
from dalembert.engine import interrupts, loop

from test_protocol import knife_edge as spring_skate   # a system of ours, not in the zoo

Q0, V0 = np.array([0.3, -0.2, 0.1]), np.array([np.cos(0.1), np.sin(0.1), 0.7])


def log_potential_skate():
    """A skate whose potential log(1 + x) goes NaN at x < −1 while its gradient stays finite."""
    return dl.NonholonomicSystem(
        mass_matrix=jnp.eye(3), potential=lambda q: jnp.log(1.0 + q[0]),
        constraint_matrix=lambda q: jnp.array([[jnp.sin(q[2]), -jnp.cos(q[2]), 0.0]]), name="log-skate")


SPRING = spring_skate()
LOGSK = log_potential_skate()


# --- end times --------------------------------------------------------------------------------

@pytest.mark.parametrize("h, T, what", [(0.03, 10.0, "not a whole number of steps"),
                                        (100.0, 10.0, "larger than t_final"),
                                        (5e-324, 10.0, "more than a run can take"),
                                        (1e-3, 1e308, "more than a run can take")])
def test_bad_end_times_are_input_errors(h, T, what):
    with pytest.raises(dl.InputError, match=what):
        dl.integrate(SPRING, "nh-rattle", q0=Q0, v0=V0, h=h, t_final=T)


def test_save_every_above_int32_is_an_input_error():
    with pytest.raises(dl.InputError, match="save_every"):
        dl.integrate(SPRING, "nh-rattle", q0=Q0, v0=V0, h=0.1, t_final=1.0, save_every=2 ** 31)


@pytest.mark.parametrize("method", ["nh-rattle", "gni-midpoint"])
def test_partial_last_node_ends_at_t_final_with_the_same_nodes(method):
    every = dl.integrate(SPRING, method, q0=Q0, v0=V0, h=0.01, t_final=10.0)
    strided = dl.integrate(SPRING, method, q0=Q0, v0=V0, h=0.01, t_final=10.0, save_every=7)
    assert strided.t[-1] == pytest.approx(10.0, abs=1e-12) and strided.metadata["t_final"] == pytest.approx(10.0)
    assert len(strided) == 1000 // 7 + 2
    np.testing.assert_array_equal(strided.q[:-1], every.q[:-1:7])
    np.testing.assert_array_equal(strided.q[-1], every.q[-1])
    np.testing.assert_allclose(strided.t[:-1], every.t[:-1:7], rtol=0, atol=1e-12)


# --- checks at every step -----------------------------------------------------------------------

def test_non_finite_energy_is_caught_at_the_step_whatever_save_every():
    kw = dict(q0=np.zeros(3), v0=np.array([-3.0, 0.0, 0.0]), h=0.01, t_final=5.0)
    steps = []
    for k in (1, 7):
        with pytest.raises(dl.ConvergenceError) as e:
            dl.integrate(LOGSK, "nh-rattle", save_every=k, **kw)
        steps.append(e.value.step)
        tr = e.value.trajectory
        assert np.all(np.isfinite(tr.energy)) and tr.t[-1] <= e.value.time
    assert steps[0] == steps[1]


def _runaway():
    """A particle in V = −q₁⁴ (a constant constraint on q₃): q₁ reaches inf in finite time, so
    an explicit step's state goes non-finite (inf, then NaN) between saved nodes."""
    return dl.NonholonomicSystem(mass_matrix=jnp.eye(3), potential=lambda q: -q[0] ** 4,
                                 constraint_matrix=lambda q: jnp.array([[0.0, 0.0, 1.0]]), name="runaway")


@pytest.mark.parametrize("system, v0", [(LOGSK, [-3.0, 0.0, 0.0]), ("runaway", [3.0, 0.0, 0.0])])
@pytest.mark.parametrize("save_every", [1, 7, 1000])
def test_explicit_steps_checked_after_the_node_fail_where_every_step_is_checked(system, v0, save_every):
    """An explicit step runs a node unchecked and checks after it (loop.run_explicit_steps);
    a failure is then located by the node's steps again, each checked. The step named and the
    prefix kept equal those of the loop that checks every step (check_every=1)."""
    system = _runaway() if system == "runaway" else system
    kw = dict(q0=np.zeros(3), v0=np.array(v0), h=0.01, t_final=20.0, save_every=save_every)
    errs = []
    for extra in ({}, {"check_every": 1}):
        with pytest.raises(dl.ConvergenceError) as e:
            dl.integrate(system, "nh-rattle", **kw, **extra)
        errs.append(e.value)
    assert errs[0].step == errs[1].step and 0 < errs[0].step < 1995
    np.testing.assert_array_equal(errs[0].trajectory.q, errs[1].trajectory.q)
    assert np.all(np.isfinite(errs[0].trajectory.q))
    # dl.solve (a scan, differentiable) takes the same path: the same step, a frozen finite state
    out = dl.solve(system, "nh-rattle", (kw["q0"], kw["v0"]), 0.01, (2000 // save_every) * save_every,
                   save_every=save_every)
    assert not bool(out["ok"]) and int(out["failed_step"]) == errs[0].step
    assert np.all(np.isfinite(np.asarray(out["q"])))


def test_the_unchecked_loop_is_chosen_for_explicit_steps_only():
    from dalembert.engine import programs
    state = (jnp.asarray(Q0), jnp.asarray(V0))
    for method, explicit in (("nh-rattle", True), ("gni-midpoint", False),
                             ("nh-rattle-sym", False)):
        b = programs.bind(SPRING, dl.methods.get(method), tuple(np.asarray(x) for x in state), {})
        assert loop.never_fails(b.scheme, b.scheme.init(*state, 0.01), 0.01) is explicit, method
    b = programs.bind(SPRING, dl.methods.get("nh-rattle"), (Q0, V0), {"check_every": 3})
    assert not loop.never_fails(b.scheme, b.scheme.init(*state, 0.01), 0.01)
    # a composition of explicit steps (its flag is True & True, still a constant): constant G
    gear = dl.models.get("gearbox")
    g0 = (jnp.asarray(gear.q0), jnp.asarray(gear.v0))
    b = programs.bind(gear.system, dl.methods.get("gni-euler-ab"), tuple(np.asarray(x) for x in g0), {})
    assert loop.never_fails(b.scheme, b.scheme.init(*g0, 0.01), 0.01)


def test_single_runs_of_explicit_steps_use_the_fast_chunk_and_recheck_only_on_failure():
    """An explicit method's single run compiles the unchecked chunk (programs.Rechecked), whose
    checked twin is compiled only once a chunk fails; an implicit one compiles the checked chunk."""
    from dalembert.engine import programs
    # a system object of its own: the compiled chunks are cached per system object, and another
    # test's failing run of the module's LOGSK would already have compiled the checked twin
    skate = log_potential_skate()
    x0 = (np.asarray(Q0), np.asarray(V0))
    # (the runs below are short: at most loop.SHORT_CHUNK_SAVES nodes, the short chunk)
    _, chunk, _ = programs.single_run_programs(skate, dl.methods.get("nh-rattle"), {}, x0, np.float64(0.01),
                                               short=True)
    assert isinstance(chunk, programs.Rechecked) and chunk.checked is None
    dl.integrate(skate, "nh-rattle", q0=Q0, v0=V0, h=0.01, t_final=1.0)
    assert chunk.checked is None
    with pytest.raises(dl.ConvergenceError):
        dl.integrate(skate, "nh-rattle", q0=np.zeros(3), v0=np.array([-3.0, 0.0, 0.0]), h=0.01, t_final=5.0)
    assert chunk.checked is not None
    _, chunk, _ = programs.single_run_programs(skate, dl.methods.get("gni-midpoint"), {}, x0, np.float64(0.01),
                                               short=True)
    assert not isinstance(chunk, programs.Rechecked)


def test_node_records_join_to_the_arrays_they_pack():
    """MemoryNodes with a layout keeps flat records and unpacks views of their join: the same
    arrays as joining each array, for a single run (node axis 0) and an ensemble (axis 1)."""
    from dalembert.engine.loop import RecordLayout
    from dalembert.engine.stream import MemoryNodes
    rng = np.random.default_rng(0)
    layout = RecordLayout(("energy", "lam", "q"), ((), (1,), (2, 3)), (1, 1, 6))
    for lead in ((), (4,)):
        pieces = [{k: rng.normal(size=lead + (r,) + shp) for k, shp in zip(layout.names, layout.shapes)}
                  for r in (1, 5, 3)]
        axis = len(lead)
        flat, plain = MemoryNodes(pieces[0], axis=axis, layout=layout), MemoryNodes(pieces[0], axis=axis)
        for p in pieces[1:]:
            flat.append_records(layout.pack(p), layout)
            plain.append_records(layout.pack(p), layout)
        assert flat.records is not None and plain.records is None
        a, b = flat.arrays(), plain.arrays()
        for k in layout.names:
            np.testing.assert_array_equal(a[k], b[k])
            np.testing.assert_array_equal(a[k], np.concatenate([p[k] for p in pieces], axis=axis))
    # a single run's records copied into one array of the announced rows as they come (9 rows
    # here), and joined as pieces after all when more come than announced (7)
    pieces = [{k: rng.normal(size=(r,) + shp) for k, shp in zip(layout.names, layout.shapes)} for r in (1, 5, 3)]
    for rows in (9, 12, 7):
        held = MemoryNodes(pieces[0], layout=layout, rows=rows)
        for i, p in enumerate(pieces[1:]):
            held.append_records(layout.pack(p), layout)
            got = held.arrays()            # (a checkpoint reads them mid-run)
            for k in layout.names:
                np.testing.assert_array_equal(got[k], np.concatenate([q[k] for q in pieces[:i + 2]]))
        assert (held.buffer is not None) == (rows >= 9)


def _asymmetric_past(x):
    """A knife edge whose metric loses its symmetry once q[0] > x (between saved nodes)."""
    def G(q):
        return jnp.array([[1.0, jnp.where(q[0] > x, 0.3, 0.0), 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]])
    return dl.NonholonomicSystem(mass_matrix=G, potential=lambda q: 0.0 * q[0],
                                 constraint_matrix=lambda q: jnp.array([[jnp.sin(q[2]), -jnp.cos(q[2]), 0.0]]),
                                 name="asymmetric-past")


def test_check_every_finds_a_broken_invariant_between_saved_nodes():
    system = _asymmetric_past(0.5)             # q[0] = t: broken after step 49 (t = 0.5)
    kw = dict(q0=np.zeros(3), v0=np.array([1.0, 0.0, 0.0]), h=0.01, t_final=2.0, save_every=100)
    with pytest.raises(dl.ConvergenceError, match="invariant") as nodes_only:
        dl.integrate(system, "nh-rattle", **kw)
    with pytest.raises(dl.ConvergenceError, match="invariant") as every:
        dl.integrate(system, "nh-rattle", check_every=1, **kw)
    assert nodes_only.value.step == 99 and every.value.step == 49
    a = dl.integrate(SPRING, "gni-midpoint", q0=Q0, v0=V0, h=0.01, t_final=10.0, save_every=10, check_every=7)
    b = dl.integrate(SPRING, "gni-midpoint", q0=Q0, v0=V0, h=0.01, t_final=10.0, save_every=10)
    np.testing.assert_array_equal(a.q, b.q)     # the checks do not change the run
    for bad in (0, -3, 1.5, True):
        with pytest.raises(dl.InputError, match="check_every"):
            dl.integrate(SPRING, "nh-rattle", q0=Q0, v0=V0, h=0.1, t_final=1.0, check_every=bad)


@pytest.mark.parametrize("save_every", [1, 2])
def test_on_parasitic_stop_fails_at_the_step_the_mode_grows(save_every):
    """The sleigh's attracting regime (nh-rattle, h = 0.01): the period-2 mode grows past
    step ~42 000; 'stop' fails there, at the step the post-run detector reports, whatever
    save_every (an even one used to hide the mode)."""
    mdl = dl.models.get("chaplygin-sleigh")
    kw = dict(h=0.01, t_final=600.0, save_every=save_every, **mdl.initial_state)
    with pytest.warns(dl.monitors.ParasiticModeWarning):
        warned = dl.integrate(mdl.system, "nh-rattle", **kw)
    with pytest.raises(dl.ConvergenceError, match="parasitic") as e:
        dl.integrate(mdl.system, "nh-rattle", on_parasitic="stop", **kw)
    detected = warned.metadata["parasitic_mode"]["step"]
    assert abs(e.value.step - detected) <= 2 * save_every + 10
    part = e.value.trajectory
    np.testing.assert_array_equal(part.q, warned.q[:len(part)])
    with pytest.raises(dl.InputError, match="no parasitic-mode monitor"):
        dl.integrate(mdl.system, "dla-midpoint", on_parasitic="stop", **dict(kw, t_final=1.0))


# --- checkpoints, resume, interrupts --------------------------------------------------------

def _interrupt_after(monkeypatch, calls: int, name="SIGTERM"):
    """Make the driver see a deferred signal after ``calls`` chunk calls."""
    n = {"k": 0}

    def fake():
        n["k"] += 1
        return name if n["k"] >= calls else None
    monkeypatch.setattr(interrupts, "requested", fake)


@pytest.mark.parametrize("method, system", [("nh-rattle", SPRING), ("gni-midpoint", SPRING),
                                            ("dg-gonzalez", SPRING)])
def test_interrupted_then_resumed_equals_uninterrupted_bit_for_bit(method, system, tmp_path, monkeypatch):
    kw = dict(q0=Q0, v0=V0, h=0.02, t_final=40.0, save_every=3)
    ref = dl.integrate(system, method, **kw)
    ck = tmp_path / "ck.npz"
    _interrupt_after(monkeypatch, 2)
    with pytest.raises(dl.RunInterrupted) as e:
        dl.integrate(system, method, chunk_steps=300, checkpoint=ck, checkpoint_every=1e9, **kw)
    monkeypatch.undo()
    part = e.value.trajectory
    assert e.value.signal == "SIGTERM" and e.value.checkpoint == ck and 0 < len(part) < len(ref)
    np.testing.assert_array_equal(part.q, ref.q[:len(part)])
    res = dl.resume(ck, system=system)
    assert res.metadata["resumed_at_step"] == e.value.step
    for k in ("t", "q", "v", "energy", "constraint_residual"):
        np.testing.assert_array_equal(getattr(res, k), getattr(ref, k), err_msg=k)


def test_keyboard_interrupt_keeps_the_completed_chunks(monkeypatch):
    kw = dict(q0=Q0, v0=V0, h=0.02, t_final=40.0)
    ref = dl.integrate(SPRING, "nh-rattle", **kw)
    real = loop.ProgressBar.update
    n = {"k": 0}

    def update(self, done, elapsed):           # Ctrl-C arriving between two chunk calls
        n["k"] += 1
        if n["k"] == 3:
            raise KeyboardInterrupt
        return real(self, done, elapsed)
    monkeypatch.setattr(loop.ProgressBar, "update", update)
    with pytest.raises(KeyboardInterrupt) as e:
        dl.integrate(SPRING, "nh-rattle", chunk_steps=250, **kw)
    assert isinstance(e.value, dl.RunInterrupted)
    part = e.value.trajectory
    assert len(part) == 3 * 250 + 1
    np.testing.assert_array_equal(part.q, ref.q[:len(part)])


def test_resume_refuses_damaged_checkpoints_and_other_systems(tmp_path, monkeypatch):
    ck = tmp_path / "ck.npz"
    _interrupt_after(monkeypatch, 1)
    with pytest.raises(dl.RunInterrupted):
        dl.integrate(SPRING, "nh-rattle", q0=Q0, v0=V0, h=0.02, t_final=40.0, chunk_steps=300, checkpoint=ck)
    monkeypatch.undo()
    with pytest.raises(dl.InputError, match="user system"):
        dl.resume(ck)
    with pytest.raises(dl.InputError, match="system"):
        dl.resume(ck, system=LOGSK)
    data = ck.read_bytes()
    (tmp_path / "cut.npz").write_bytes(data[: len(data) // 2])
    with pytest.raises(dl.InputError, match="damaged"):
        dl.resume(tmp_path / "cut.npz", system=SPRING)
    with pytest.raises(dl.InputError, match="no checkpoint"):
        dl.resume(tmp_path / "none.npz", system=SPRING)


# --- streaming output --------------------------------------------------------------------------

@pytest.mark.parametrize("method", ["nh-rattle", "gni-midpoint"])
def test_streamed_run_equals_in_memory_and_resumes_bit_for_bit(method, tmp_path, monkeypatch):
    kw = dict(q0=Q0, v0=V0, h=0.02, t_final=40.0, save_every=3)
    ref = dl.integrate(SPRING, method, **kw)
    out, ck = tmp_path / "run.h5", tmp_path / "ck.npz"
    _interrupt_after(monkeypatch, 2)
    with pytest.raises(dl.RunInterrupted) as e:
        dl.integrate(SPRING, method, chunk_steps=300, checkpoint=ck, checkpoint_every=1e9, stream=out, **kw)
    monkeypatch.undo()
    assert not out.exists() and (tmp_path / "run.h5.partial").exists()
    assert ckpt_mod.read(ck)["arrays"] == {}              # the nodes are in the stream, not the checkpoint
    early = tmp_path / "early.npz"
    early.write_bytes(ck.read_bytes())
    np.testing.assert_array_equal(e.value.trajectory.q[:], ref.q[:len(e.value.trajectory)])
    # resumed, interrupted again (the file now holds rows past the early checkpoint) ...
    _interrupt_after(monkeypatch, 2)
    with pytest.raises(dl.RunInterrupted):
        dl.resume(ck, system=SPRING, checkpoint_every=1e9)
    monkeypatch.undo()
    # ... and resumed from the early checkpoint: the later rows are dropped and rewritten
    res = dl.resume(early, system=SPRING, checkpoint=False)
    assert out.exists() and not (tmp_path / "run.h5.partial").exists()
    for k in ("t", "q", "v", "energy", "constraint_residual"):
        np.testing.assert_array_equal(getattr(res, k)[:], getattr(ref, k), err_msg=k)
    back = dl.load(out, lazy=False)
    np.testing.assert_array_equal(back.q, ref.q)
    assert back.max_relative_energy_error == ref.max_relative_energy_error


def test_a_failed_streamed_run_keeps_its_nodes_in_the_file(tmp_path):
    kw = dict(q0=np.zeros(3), v0=np.array([-3.0, 0.0, 0.0]), h=0.01, t_final=5.0, save_every=7)
    with pytest.raises(dl.ConvergenceError) as mem:
        dl.integrate(LOGSK, "nh-rattle", **kw)
    with pytest.raises(dl.ConvergenceError, match="run.h5") as e:
        dl.integrate(LOGSK, "nh-rattle", stream=tmp_path / "run.h5", **kw)
    back = dl.load(tmp_path / "run.h5")
    assert back.metadata["failed"]["step"] == e.value.step == mem.value.step
    np.testing.assert_array_equal(back.q[:], mem.value.trajectory.q)


def test_streamed_run_refused_when_the_disk_is_too_small(tmp_path, monkeypatch):
    import shutil
    from dalembert.engine import stream
    monkeypatch.setattr(shutil, "disk_usage", lambda p: shutil._ntuple_diskusage(10**6, 10**6 - 1000, 1000))
    with pytest.raises(dl.InputError, match="free"):
        dl.integrate(SPRING, "nh-rattle", q0=Q0, v0=V0, h=0.01, t_final=10.0, stream=tmp_path / "r.h5")
    assert not (tmp_path / "r.h5.partial").exists() and stream.DISK_FRACTION < 1


# --- ensembles --------------------------------------------------------------------------------

def test_ensemble_keeps_healthy_members_and_round_trips(tmp_path):
    q0 = np.zeros((3, 3))
    v0 = np.array([[2.0, 0.0, 0.0], [-3.0, 0.0, 0.0], [0.2, 0.0, 0.3]])
    kw = dict(h=0.01, t_final=1.0, save_every=7)
    with pytest.warns(dl.engine.ensembles.EnsembleMemberWarning, match="1 of 3"):
        ens = dl.ensemble(LOGSK, "nh-rattle", q0=q0, v0=v0, **kw)
    assert list(ens.status) == ["ok", "failed", "ok"] and list(ens.failed) == [1]
    with pytest.raises(dl.ConvergenceError) as e:
        dl.integrate(LOGSK, "nh-rattle", q0=q0[1], v0=v0[1], **kw)
    assert ens.metadata["failures"]["1"]["step"] == e.value.step
    good = len(e.value.trajectory)
    np.testing.assert_allclose(ens.q[1, :good], e.value.trajectory.q, rtol=0, atol=1e-13)
    assert np.all(np.isnan(ens.q[1, good:]))
    for i in (0, 2):
        tr = dl.integrate(LOGSK, "nh-rattle", q0=q0[i], v0=v0[i], **kw)
        np.testing.assert_allclose(ens.q[i], tr.q, rtol=0, atol=1e-13)
    back = dl.load(ens.save(tmp_path / "ens"))
    assert isinstance(back, dl.Ensemble) and list(back.status) == list(ens.status)
    np.testing.assert_array_equal(back.q, ens.q)
    with pytest.raises(dl.ConvergenceError, match="member 1"):
        dl.ensemble(LOGSK, "nh-rattle", q0=q0, v0=v0, on_failure="raise", **kw)


def test_ensemble_without_members_is_an_input_error():
    with pytest.raises(dl.InputError, match="no members"):
        dl.ensemble(SPRING, "nh-rattle", q0=np.zeros((0, 3)), v0=np.zeros((0, 3)), h=0.1, t_final=1.0)


# --- bounds and files ---------------------------------------------------------------------------

def test_a_run_too_large_for_memory_is_refused_before_it_runs(monkeypatch):
    monkeypatch.setattr(loop, "available_memory", lambda: 10 ** 6)
    # 10⁶ nodes: above loop.SMALL_RUN_BYTES, below which the available memory is not read
    with pytest.raises(dl.InputError, match="save_every"):
        dl.integrate(SPRING, "nh-rattle", q0=Q0, v0=V0, h=0.001, t_final=1000.0)


def test_complex_valued_callables_are_refused():
    sys_c = dl.NonholonomicSystem(mass_matrix=jnp.eye(3), potential=lambda q: (1.0 + 1j) * q[0],
                                  constraint_matrix=lambda q: jnp.array([[jnp.sin(q[2]), -jnp.cos(q[2]), 0.0]]))
    with pytest.raises(dl.InputError, match="complex"):
        dl.integrate(sys_c, "nh-rattle", q0=Q0, v0=V0, h=0.1, t_final=1.0)


def test_load_refuses_truncated_and_inconsistent_files(tmp_path):
    tr = dl.integrate(SPRING, "nh-rattle", q0=Q0, v0=V0, h=0.1, t_final=1.0)
    p = tr.save(tmp_path / "a.npz")
    data = p.read_bytes()
    for cut in (len(data) // 3, len(data) - 10):
        (tmp_path / "cut.npz").write_bytes(data[:cut])
        with pytest.raises(dl.InputError, match="trajectory"):
            dl.load(tmp_path / "cut.npz")
    np.savez(tmp_path / "bad.npz", t=tr.t, q=tr.q[:-1], metadata=np.array("{}"))
    with pytest.raises(dl.InputError, match="'q'"):
        dl.load(tmp_path / "bad.npz")


def test_a_metric_that_loses_its_symmetry_during_the_run_is_caught():
    """G(q) symmetric at q0 but not once x > 0.5: the run stops at the first saved node past it
    (cause INVARIANT) instead of returning a trajectory with a silently wrong energy."""
    def G(q):
        skew = jnp.maximum(q[0] - 0.5, 0.0)
        return jnp.array([[1.0, skew, 0.0], [-skew, 1.0, 0.0], [0.0, 0.0, 0.3]]) + 0.1 * jnp.diag(jnp.sin(q) ** 2)
    bad = dl.NonholonomicSystem(mass_matrix=G, constraint_matrix=lambda q: jnp.array([[jnp.sin(q[2]), -jnp.cos(q[2]), 0.0]]),
                                name="skewing-metric")
    from dalembert.solvers import newton_module as nm
    with pytest.raises(dl.ConvergenceError, match="not symmetric") as e:
        dl.integrate(bad, "gni-midpoint", q0=np.zeros(3), v0=np.array([1.0, 0.0, 0.0]), h=0.01, t_final=2.0,
                     save_every=5)
    assert e.value.cause == nm.INVARIANT and 0.5 <= e.value.time <= 0.56
    assert np.all(e.value.trajectory.q[:, 0] <= 0.5 + 1e-12)


def test_a_poisson_matrix_that_loses_its_skew_symmetry_is_caught():
    def Pi(x):
        drift = jnp.maximum(x[0] - 1.2, 0.0)
        return jnp.array([[0.0, 1.0], [-1.0 + drift, 0.0]])
    ap = dl.AlmostPoissonSystem(poisson_matrix=Pi, hamiltonian=lambda x: 0.5 * x @ x, name="skew-drift")
    with pytest.raises(dl.ConvergenceError, match="not skew"):
        dl.integrate(ap, "dg-gonzalez", x0=np.array([1.0, 1.0]), h=0.01, t_final=10.0)


def _unnamed_skate(k):
    """An unnamed skate (default name "system") with a spring of stiffness k: two of them differ
    only by the values of their potential."""
    return dl.NonholonomicSystem(
        mass_matrix=jnp.eye(3), potential=lambda q: 0.5 * k * q[0] ** 2,
        constraint_matrix=lambda q: jnp.array([[jnp.sin(q[2]), -jnp.cos(q[2]), 0.0]]))


def test_resume_identifies_the_system_by_content_not_by_name(tmp_path, monkeypatch):
    """Issue 39 item 3: unnamed systems share the default name; the checkpoint's fingerprint (values
    of the system's functions at probe states) refuses another system and accepts the same one,
    or an equal one rebuilt by the same code, with the uninterrupted result bit for bit."""
    a, other = _unnamed_skate(1.0), _unnamed_skate(1.5)
    assert a.name == other.name == "system"
    kw = dict(q0=Q0, v0=V0, h=0.02, t_final=20.0)
    ref = dl.integrate(a, "nh-rattle", **kw)
    ck = tmp_path / "ck.npz"
    _interrupt_after(monkeypatch, 1)
    with pytest.raises(dl.RunInterrupted):
        dl.integrate(a, "nh-rattle", chunk_steps=300, checkpoint=ck, checkpoint_every=1e9, **kw)
    monkeypatch.undo()
    assert ckpt_mod.read(ck)["metadata"]["system_fingerprint"] == a.fingerprint(Q0, V0)
    with pytest.raises(dl.InputError) as e:
        dl.resume(ck, system=other, checkpoint=False)
    msg = str(e.value)
    assert "\n" not in msg and f"checkpoint {ck} was written by a different system" in msg
    assert "resume with the same system or start again" in msg
    for same in (a, _unnamed_skate(1.0)):               # the object itself; rebuilt by the same code
        res = dl.resume(ck, system=same, checkpoint=False)
        for k in ("t", "q", "v", "energy", "constraint_residual"):
            np.testing.assert_array_equal(getattr(res, k), getattr(ref, k), err_msg=k)


def _kinds_with_a_parameter():
    """(build(k), initial state) for one system of every kind; k changes one function's values."""
    from dalembert import models
    from dalembert.systems.lie_nonholonomic import LieNonholonomicSystem
    ball = models.get("rolling-ball-pre")
    x = np.array([0.3, -0.4])
    return {
        "nonholonomic": (lambda k: models.get("chaplygin-sleigh", J=k).system, models.get("chaplygin-sleigh").state0()),
        "reduced": (lambda k: models.get("rolling-ball-pre", I3=0.4 * k).system, ball.state0()),
        "euler-poincare-suslov": (lambda k: dl.EulerPoincareSuslovSystem(np.diag([1.0, 2.0, k]), np.array([[0.0, 0.0, 1.0]])),
                                  (np.eye(3), np.array([1.0, 0.5, 0.0]))),
        "almost-poisson": (lambda k: dl.AlmostPoissonSystem(lambda x: jnp.array([[0.0, 1.0], [-1.0, 0.0]]),
                                                             lambda x: 0.5 * jnp.sum(x * x) + k * x[0] ** 4), (x,)),
        "lie-nonholonomic": (lambda k: LieNonholonomicSystem(np.diag([1.0, 2.0, k]), lambda R: R[2, :][None, :]),
                             (np.eye(3), np.array([1.0, 0.5, 0.0]))),
    }


@pytest.mark.parametrize("kind", sorted(_kinds_with_a_parameter()))
def test_fingerprints_tell_systems_of_every_kind_apart(kind):
    """Every kind's fingerprint is the same for an equal system built again and changes with one
    parameter of one of its functions."""
    build, x0s = _kinds_with_a_parameter()[kind]
    a = build(3.0)
    assert a.kind == kind
    fp = a.fingerprint(*x0s)
    assert len(fp) == 64 and fp == a.fingerprint(*x0s) == build(3.0).fingerprint(*x0s)
    assert build(3.0 + 1e-6).fingerprint(*x0s) != fp
