"""engine.request_no_ynn_fusions: the XLA_FLAGS edit it makes (on a copy of the environment)."""
from dalembert import engine

OPT = "--xla_cpu_experimental_ynn_fusion_type="


def test_sets_option_when_forced_and_keeps_other_flags():
    env = {"DALEMBERT_XLA_YNN": "0", "XLA_FLAGS": "--xla_foo=1"}
    assert engine.request_no_ynn_fusions(env)
    assert env["XLA_FLAGS"].split() == ["--xla_foo=1", OPT]
    assert engine.request_no_ynn_fusions(env)               # idempotent
    assert env["XLA_FLAGS"].count("ynn") == 1


def test_opt_out_and_existing_value_are_respected():
    env = {"DALEMBERT_XLA_YNN": "1"}
    assert not engine.request_no_ynn_fusions(env)
    assert "XLA_FLAGS" not in env
    env = {"XLA_FLAGS": "--xla_cpu_experimental_ynn_fusion_type=reduce"}
    assert engine.request_no_ynn_fusions(env)
    assert env["XLA_FLAGS"] == "--xla_cpu_experimental_ynn_fusion_type=reduce"


def test_unknown_jaxlib_is_left_alone(monkeypatch):
    monkeypatch.setattr(engine, "_jaxlib_version", lambda: (99, 0))
    env = {}
    assert not engine.request_no_ynn_fusions(env)
    assert env == {}
