"""The model gallery's figure cache (docs/_hooks/generate.py): a figure is drawn once per set of
inputs and reused by later builds; a change of the model's parameters, step, initial state or of
dalembert's source draws it again, and replaces the model's earlier figure (not that of a model
whose name extends it). The figure code is replaced by a stub that counts its calls: no run."""
import importlib.util
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

pytest.importorskip("mkdocs")

import dalembert as dl  # noqa: E402

HOOK = Path(__file__).resolve().parents[2] / "docs" / "_hooks" / "generate.py"


@pytest.fixture
def gen(monkeypatch):
    spec = importlib.util.spec_from_file_location("dalembert_docs_hook", HOOK)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.source_digest(dl)                               # of the real figure code
    calls = []

    def figure(dl_, model):
        calls.append(model.name)
        return f"PNG {model.name} {model.params} {len(calls)}".encode(), f"caption {model.name}", 1.5, ["a note"]
    monkeypatch.setattr(module, "_figure", figure)
    module.calls = calls
    return module


def fake(name="ball", **changes):
    m = dict(name=name, params={"r": 1.0}, default_h=0.1, default_t_final=1.0, default_method="nh-rattle",
             default_options={}, initial_state={"q0": np.zeros(2), "v0": np.ones(2)}, path_array="q", path=(0, 1),
             coordinates=("x", "y"))
    m.update(changes)
    return SimpleNamespace(**m)


def test_a_figure_is_drawn_once_for_the_same_inputs(gen, tmp_path):
    first = gen.cached_figure(dl, fake(), tmp_path)
    again = gen.cached_figure(dl, fake(), tmp_path)
    assert gen.calls == ["ball"] and first[-1] is False and again[-1] is True
    assert again[:4] == first[:4]                          # bytes, caption, seconds, notes
    assert gen.cached_figure(dl, fake(), None)[-1] is False and len(gen.calls) == 2     # cache off


@pytest.mark.parametrize("change", [{"params": {"r": 2.0}}, {"default_h": 0.05}, {"default_method": "gni-euler-a"},
                                    {"default_options": {"rtol": 1e-12}},
                                    {"initial_state": {"q0": np.zeros(2), "v0": np.array([1.0, 2.0])}},
                                    {"default_t_final": 0.5}])
def test_another_input_draws_it_again_and_replaces_the_old_figure(gen, tmp_path, change):
    gen.cached_figure(dl, fake(), tmp_path)
    gen.cached_figure(dl, fake("ball-pre"), tmp_path)      # a model whose name extends "ball"
    out = gen.cached_figure(dl, fake(**change), tmp_path)
    assert out[-1] is False and gen.calls == ["ball", "ball-pre", "ball"]
    assert sorted(p.name.rsplit("-", 1)[0] for p in tmp_path.iterdir()) == ["ball", "ball", "ball-pre", "ball-pre"]
    assert gen.cached_figure(dl, fake(**change), tmp_path)[-1] is True
    assert gen.cached_figure(dl, fake("ball-pre"), tmp_path)[-1] is True


def test_a_change_of_dalembert_source_draws_it_again(gen, tmp_path, monkeypatch):
    gen.cached_figure(dl, fake(), tmp_path)
    root = Path(dl.__file__).resolve().parent
    monkeypatch.setitem(gen._SOURCE_DIGEST, root, "0" * 64)
    assert gen.cached_figure(dl, fake(), tmp_path)[-1] is False and len(gen.calls) == 2


def test_the_cache_directory_and_its_switch(gen, monkeypatch, tmp_path):
    monkeypatch.setenv("DALEMBERT_DOCS_CACHE", str(tmp_path / "figs"))
    assert gen.figure_cache_dir() == tmp_path / "figs"
    monkeypatch.setenv("DALEMBERT_DOCS_CACHE", "off")
    assert gen.figure_cache_dir() is None
    monkeypatch.delenv("DALEMBERT_DOCS_CACHE")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    assert gen.figure_cache_dir() == tmp_path / "dalembert" / "docs-figures"
    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    out = gen.cached_figure(dl, fake(), blocked)           # cannot be written: drawn, not stored
    assert out[-1] is False and blocked.read_text() == "not a directory"
