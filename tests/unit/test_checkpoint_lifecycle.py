"""The checkpoint's life cycle in the API (``dl.integrate(..., checkpoint=path)``): removed when
the run completes; the same run's checkpoint at the path is continued (bit for bit the
uninterrupted result), another run's (or a file that is not a checkpoint) refused in one line
and left as it is."""
from unittest import mock

import numpy as np
import pytest

import dalembert as dl
from dalembert.engine import stream

MDL = dl.models.get("gearbox")
KW = dict(h=0.01, t_final=2.0, **MDL.initial_state)


def _interrupted(path, **kw):
    """A run with checkpoint ``path`` interrupted (KeyboardInterrupt) at its second chunk of 50 steps."""
    real, count = stream.MemoryNodes.append_records, {"n": 0}

    def stop(self, records, layout):
        count["n"] += 1
        if count["n"] == 2:
            raise KeyboardInterrupt
        return real(self, records, layout)
    with mock.patch.object(stream.MemoryNodes, "append_records", stop), pytest.raises(dl.RunInterrupted):
        dl.integrate(MDL.system, "nh-rattle", chunk_steps=50, checkpoint=path, checkpoint_every=0,
                     **dict(KW, **kw))
    assert path.exists()
    return path.read_bytes()


@pytest.fixture(scope="module")
def uninterrupted():
    return dl.integrate(MDL.system, "nh-rattle", **KW)


def _same(a, b):
    return all(np.array_equal(getattr(a, k), getattr(b, k)) for k in ("t", "q", "v", "energy"))


def test_a_completed_run_removes_its_checkpoint_and_a_rerun_continues_the_same_runs(tmp_path, uninterrupted):
    ck = tmp_path / "ck.npz"
    tr = dl.integrate(MDL.system, "nh-rattle", checkpoint=ck, checkpoint_every=0, chunk_steps=50, **KW)
    assert _same(tr, uninterrupted) and not ck.exists()
    _interrupted(ck)
    tr = dl.integrate(MDL.system, "nh-rattle", checkpoint=ck, **KW)           # the same run: continued
    assert tr.metadata["resumed_at_step"] == 50 and _same(tr, uninterrupted) and not ck.exists()
    # keep_checkpoint (the command line's, which removes it after writing its files)
    _interrupted(ck)
    dl.integrate(MDL.system, "nh-rattle", checkpoint=ck, keep_checkpoint=True, **KW)
    assert ck.exists()
    tr = dl.resume(ck, MDL.system)
    assert _same(tr, uninterrupted) and not ck.exists()


def _other_system():
    """The gearbox under the same name with another potential: only the fingerprint differs."""
    s = MDL.system
    return dl.NonholonomicSystem(mass_matrix=s.mass_matrix, potential=lambda q: s.potential(q) + 0.1 * q[0] ** 2,
                                 constraint_matrix=s.constraint_matrix, name=s.name)


@pytest.mark.parametrize("change, named", [
    (dict(h=0.02), "h (0.01 there, 0.02 here)"),
    (dict(method="gni-euler-a"), "method ('nh-rattle' there, 'gni-euler-a' here)"),
    (dict(v0=1.1 * MDL.initial_state["v0"]), "v0"),          # (linear constraints: still consistent)
    (dict(system="other"), "the system's functions"),
])
def test_another_runs_checkpoint_is_refused_and_left_as_it_is(change, named, tmp_path):
    ck = tmp_path / "ck.npz"
    before = _interrupted(ck)
    kw = dict(KW)
    kw.update({k: v for k, v in change.items() if k not in ("method", "system")})
    system = _other_system() if "system" in change else MDL.system
    with pytest.raises(dl.InputError) as e:
        dl.integrate(system, change.get("method", "nh-rattle"), checkpoint=ck, **kw)
    msg = str(e.value)
    assert "\n" not in msg and "holds another run's checkpoint" in msg and named in msg and "dl.resume" in msg
    assert ck.read_bytes() == before


def test_a_file_that_is_not_a_checkpoint_is_refused_not_overwritten(tmp_path, uninterrupted):
    path = uninterrupted.save(tmp_path / "result.npz")
    before = path.read_bytes()
    with pytest.raises(dl.InputError, match=r"^checkpoint: .* is not a dalembert checkpoint.*left as it is") as e:
        dl.integrate(MDL.system, "nh-rattle", checkpoint=path, **KW)
    assert "\n" not in str(e.value) and path.read_bytes() == before


def test_a_streamed_runs_checkpoint_is_continued_with_its_partial_file(tmp_path, uninterrupted):
    ck, h5 = tmp_path / "ck.npz", tmp_path / "r.h5"
    real, count = stream.StreamNodes.append, {"n": 0}

    def stop(self, arrays):
        count["n"] += 1
        if count["n"] == 2:
            raise KeyboardInterrupt
        return real(self, arrays)
    with mock.patch.object(stream.StreamNodes, "append", stop), pytest.raises(KeyboardInterrupt):
        dl.integrate(MDL.system, "nh-rattle", chunk_steps=50, checkpoint=ck, checkpoint_every=0, stream=h5, **KW)
    with pytest.raises(dl.InputError, match=r"differs in: stream"):     # another stream file: another run
        dl.integrate(MDL.system, "nh-rattle", checkpoint=ck, stream=tmp_path / "other.h5", **KW)
    tr = dl.integrate(MDL.system, "nh-rattle", checkpoint=ck, stream=h5, **KW)
    assert tr.metadata["resumed_at_step"] > 0 and not ck.exists() and h5.exists()
    assert all(np.array_equal(np.asarray(getattr(tr, k)[:]), getattr(uninterrupted, k)) for k in ("q", "v"))
