import pytest

from masgrid._private.platform.commands.cli import main
from masgrid._private.platform.run.config import ConfigError, RunConfig


@pytest.mark.parametrize("overrides,field", [
    ({"agents": 0}, "agents"),
    ({"k": -1}, "k"),
    ({"protocol": "smoke_signals"}, "protocol"),
    ({"mode": "sideways"}, "masbench.mode"),
    ({"condition": "heroic"}, "condition"),
    ({"task": "juggling"}, "task"),
    ({"backend": "carrier_pigeon"}, "backend"),
    ({"backend": "openai"}, "model.base_url"),
    ({"colour": "blue"}, "colour"),
    ({"model": {"name": "x", "temperature": -1}}, "model.temperature"),
    ({"execution": {"executor": "slurm"}}, "execution.executor"),
])
def test_invalid_config_names_the_field(overrides, field):
    with pytest.raises(ConfigError) as err:
        RunConfig.from_mapping(overrides)
    assert f"  {field}:" in str(err.value)


def test_run_id_is_identity_not_placement():
    a = RunConfig.from_mapping({"seed": 1})
    b = RunConfig.from_mapping({"seed": 1, "results_dir": "elsewhere", "execution": {"agents_per_actor": 1}})
    c = RunConfig.from_mapping({"seed": 2})
    d = RunConfig.from_mapping({"seed": 1, "model": {"name": "scripted", "timeout_s": 5}})
    assert a.run_id == b.run_id == d.run_id != c.run_id


def test_tool_mode_is_identity_and_native_keeps_earlier_run_ids():
    plain = RunConfig.from_mapping({"seed": 1})
    native = RunConfig.from_mapping({"seed": 1, "model": {"name": "scripted", "tool_mode": "native"}})
    fenced = RunConfig.from_mapping({"seed": 1, "model": {"name": "scripted", "tool_mode": "fenced"}})
    assert "tool_mode" not in plain.identity()["model"] and fenced.identity()["model"]["tool_mode"] == "fenced"
    assert plain.run_id == native.run_id != fenced.run_id


def test_cli_rejects_bad_config_before_ray_starts():
    import subprocess
    import sys

    out = subprocess.run([sys.executable, "-m", "masgrid._private.platform.commands.cli", "run", "agents=0", "protocol=semaphore"],
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 2
    assert "invalid configuration" in out.stderr and "agents:" in out.stderr and "protocol:" in out.stderr
    assert "Ray instance" not in out.stdout + out.stderr  # failed before any Ray start-up


def test_cli_rejects_unknown_hydra_key(capsys):
    with pytest.raises(SystemExit) as exited:
        main(["run", "nonsense_key=1"])
    assert exited.value.code not in (0, None)  # a refusal, not a run
    assert "nonsense_key" in capsys.readouterr().err
