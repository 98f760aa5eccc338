"""Trajectory files, the save stride, the step count, and user-defined GNI methods."""

import jax.numpy as jnp
import numpy as np
import pytest

import dalembert as dl
from dalembert.errors import InputError

P1 = dl.models.get("p1-linear")
ARRAYS = ("t", "q", "v", "p", "lam", "energy", "constraint_residual")


def _run(method="nh-rattle", **kw):
    args = dict(q0=P1.q0, v0=P1.v0, h=0.05, t_final=5.0)
    args.update(kw)
    return dl.integrate(P1.system, method, **args)


@pytest.mark.parametrize("method", ["nh-rattle", "dla-midpoint", "reference"])
def test_save_load_round_trip(tmp_path, method):
    tr = _run(method, metadata={"note": "round trip", "params": {"a": 1.5}})
    path = tr.save(tmp_path / "sub" / "traj")
    assert path.suffix == ".npz" and path.exists()
    back = dl.load(path)
    for k in ARRAYS:
        a, b = getattr(tr, k), getattr(back, k)
        if a is None:
            assert b is None, k           # DLA has no multiplier
        else:
            assert np.array_equal(np.asarray(a), b), k
            assert np.asarray(a).dtype == b.dtype
    assert back.metadata == tr.metadata
    assert back.metadata["note"] == "round trip" and back.metadata["method"] == method
    assert len(back) == len(tr) == 101
    # plain NumPy can read the file, without pickle
    with np.load(path, allow_pickle=False) as z:
        assert np.array_equal(z["q"], tr.q)


def test_save_load_round_trip_extra_arrays(tmp_path):
    tr = _run(h=0.1, t_final=1.0)
    rng = np.random.default_rng(0)
    extra = {"R": rng.normal(size=(len(tr), 3, 3)), "omega": rng.normal(size=(len(tr), 3))}
    tr2 = dl.Trajectory(t=tr.t, q=tr.q, v=tr.v, p=tr.p, lam=tr.lam, energy=tr.energy,
                        constraint_residual=tr.constraint_residual, metadata=tr.metadata, extra=extra)
    back = dl.load(tr2.save(tmp_path / "extra.npz"))
    assert set(back.extra) == {"R", "omega"}
    assert np.array_equal(back.R, extra["R"]) and np.array_equal(back.omega, extra["omega"])
    assert np.array_equal(back.q, tr.q) and back.metadata == tr.metadata
    # a name that clashes with a standard field is refused
    bad = dl.Trajectory(t=tr.t, q=tr.q, v=tr.v, extra={"energy": tr.energy})
    with pytest.raises(InputError):
        bad.save(tmp_path / "bad.npz")


def test_load_rejects_non_trajectory_npz(tmp_path):
    p = tmp_path / "other.npz"
    np.savez(p, a=np.arange(3))
    with pytest.raises(InputError, match="not a dalembert trajectory"):
        dl.load(p)
    with pytest.raises(InputError, match="no such file"):
        dl.load(tmp_path / "missing.npz")


def test_load_rejects_non_npz_file(tmp_path):
    p = tmp_path / "junk.npz"
    p.write_text("this is not a trajectory\n")
    with pytest.raises(InputError):
        dl.load(p)


@pytest.mark.parametrize("K", [3, 4])
def test_save_every_keeps_every_kth_node_and_ends_at_t_final(K):
    full = _run()
    part = _run(save_every=K)
    assert part.metadata["n_steps"] == 100 and part.metadata["save_every"] == K
    partial = 100 % K != 0                      # K = 3: a last partial node at t_final
    assert len(part) == 100 // K + 1 + partial
    for k in ("q", "v", "p", "lam", "energy", "constraint_residual"):
        a, b = getattr(part, k), getattr(full, k)
        assert np.array_equal(a[:100 // K + 1], b[::K][:100 // K + 1]), k
        assert np.array_equal(a[-1], b[-1]), k
    assert part.t[-1] == pytest.approx(full.t[-1], abs=1e-13)
    assert np.allclose(part.t[:100 // K + 1], 0.05 * K * np.arange(100 // K + 1), rtol=0, atol=1e-13)


def test_t_final_must_be_a_whole_number_of_steps():
    with pytest.raises(InputError, match=r"t_final = 1 is not a whole number of steps of h = 0.3.*1.2 \(4 steps\)"):
        _run(h=0.3, t_final=1.0)
    # an exact multiple is accepted despite floating point noise (0.1 * 3 != 0.3)
    tr = _run(h=0.1, t_final=0.3)
    assert tr.metadata["n_steps"] == 3 and tr.t[-1] == pytest.approx(0.3, abs=1e-15)


def test_metadata_describes_the_run():
    tr = _run(h=0.05, t_final=1.0)
    md = tr.metadata
    assert md["system"] == "p1-linear" and md["method"] == "nh-rattle"
    assert md["h"] == 0.05 and md["n_steps"] == 20
    assert md["traits"]["order"] == 2
    assert md["q0"] == P1.q0.tolist() and md["v0"] == P1.v0.tolist()
    assert md["dalembert_version"] == dl.__version__
    # energies and residuals stored are those of the stored (q, v)
    E = [float(P1.system.energy(jnp.asarray(q), jnp.asarray(v))) for q, v in zip(tr.q, tr.v)]
    assert np.max(np.abs(np.array(E) - tr.energy)) < 1e-14


# ---------------------------------------------------------------------------------------------
# a user-defined GNI
# ---------------------------------------------------------------------------------------------

_G = jnp.diag(jnp.array([1.0, 2.0, 1.5]))


def _midpoint_Ld(q0, q1, h):
    """h L((q0+q1)/2, (q1−q0)/h) for P1, written by hand (G = diag(1, 2, 1.5),
    V = ½|q|² + ¼x⁴)."""
    dq = (q1 - q0) / h
    qm = 0.5 * (q0 + q1)
    return h * (0.5 * dq @ (_G @ dq) - (0.5 * qm @ qm + 0.25 * qm[0] ** 4))


MY_MIDPOINT = dl.methods.gni(_midpoint_Ld, name="my-midpoint")


def test_user_gni_equals_gni_midpoint():
    mine = _run(MY_MIDPOINT)
    ref = _run("gni-midpoint")
    assert mine.metadata["method"] == "my-midpoint"
    assert np.max(np.abs(mine.q - ref.q)) <= 1e-13
    assert np.max(np.abs(mine.v - ref.v)) <= 1e-13
    # λ = −(2/h)C⁻¹(...) amplifies round-off by 2/h = 40
    assert np.max(np.abs(mine.lam - ref.lam)) <= 1e-11
    assert mine.max_constraint_residual <= 1e-12
    assert mine.metadata["newton"]["total_iterations"] > 0


# ---------------------------------------------------------------------------------------------
# dl.load reads only plain datasets of the file itself (issue 39 item 10)
# ---------------------------------------------------------------------------------------------

def _crafted_h5(path, entry, make):
    """A dalembert HDF5 trajectory file whose node array ``entry`` is made by ``make(f, entry)``."""
    import h5py
    from dalembert.results.hdf5 import FORMAT
    tr = _run(h=0.5, t_final=5.0)
    with h5py.File(path, "w") as f:
        f.attrs["format"] = FORMAT
        f.attrs["metadata"] = '{"method": "nh-rattle"}'
        for k in ("t", "q", "v"):
            if k != entry:
                f.create_dataset(k, data=getattr(tr, k))
        make(f, entry, tr)
    return path


def _secret(tmp_path):
    s = tmp_path / "secret.bin"
    s.write_bytes(np.arange(33, dtype=np.float64).tobytes())
    return s


def _external_storage(tmp_path):
    def make(f, k, tr):
        f.create_dataset(k, shape=(11, 3), dtype="f8", external=[(str(_secret(tmp_path)), 0, 11 * 3 * 8)])
    return make


def _virtual(tmp_path):
    def make(f, k, tr):
        import h5py
        other = tmp_path / "other.h5"
        with h5py.File(other, "w") as g:
            g.create_dataset("x", data=np.ones((11, 3)))
        layout = h5py.VirtualLayout(shape=(11, 3), dtype="f8")
        layout[:] = h5py.VirtualSource(str(other), "x", shape=(11, 3))
        f.create_virtual_dataset(k, layout)
    return make


def _soft_link(tmp_path):
    def make(f, k, tr):
        import h5py
        f[k] = h5py.SoftLink("/v")
    return make


def _external_link(tmp_path):
    def make(f, k, tr):
        import h5py
        other = tmp_path / "other.h5"
        with h5py.File(other, "w") as g:
            g.create_dataset("x", data=np.ones((11, 3)))
        f[k] = h5py.ExternalLink(str(other), "/x")
    return make


def _group(tmp_path):
    def make(f, k, tr):
        f.create_group(k).create_dataset("inner", data=tr.q)
    return make


@pytest.mark.parametrize("make, what", [
    (_external_storage, "is stored outside the file (external storage)"),
    (_virtual, "is a virtual dataset"),
    (_soft_link, "is a link (SoftLink)"),
    (_external_link, "is a link (ExternalLink)"),
    (_group, "is an HDF5 group, not a dataset"),
], ids=["external-storage", "virtual", "soft-link", "external-link", "group"])
@pytest.mark.parametrize("lazy", [True, False])
def test_load_reads_only_plain_datasets_of_the_file_itself(tmp_path, make, what, lazy):
    path = _crafted_h5(tmp_path / "crafted.h5", "q", make(tmp_path))
    with pytest.raises(InputError) as ei:
        dl.load(path, lazy=lazy)
    msg = str(ei.value)
    assert "\n" not in msg and str(path) in msg and "entry 'q'" in msg and what in msg, msg
    assert "plain datasets" in msg


@pytest.mark.parametrize("fmt", ["npz", "h5"])
def test_load_refuses_deeply_nested_metadata_in_one_line(tmp_path, fmt):
    tr = _run(h=0.5, t_final=5.0)
    path = tr.save(tmp_path / f"deep.{fmt}")
    deep = "[" * 100_000 + "]" * 100_000
    if fmt == "npz":
        with np.load(path) as z:
            arrays = {k: z[k] for k in z.files}
        arrays["metadata"] = np.array(deep)
        np.savez(path, **arrays)
    else:
        import h5py
        with h5py.File(path, "r+") as f:
            f.attrs["metadata"] = deep
    with pytest.raises(InputError) as ei:
        dl.load(path)
    msg = str(ei.value)
    assert "\n" not in msg and str(path) in msg and "metadata" in msg and "nested" in msg, msg
