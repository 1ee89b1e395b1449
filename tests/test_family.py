"""The family registry's refusals: each a FamilyError naming the plugin, never a traceback or
a silently replaced column."""

from __future__ import annotations

import os
import subprocess
import sys
import types

import pytest
from pydantic import BaseModel, ValidationError

import masgrid.family as family_module
from masgrid.family import Family, FamilyError, Metric


class _EntryPoint:
    def __init__(self, name: str, value: str, load) -> None:  # type: ignore[no-untyped-def]
        self.name, self.value, self._load = name, value, load

    def load(self):  # type: ignore[no-untyped-def]
        return self._load()


def _plugin(monkeypatch, name: str, family: object) -> _EntryPoint:  # type: ignore[no-untyped-def]
    module = types.ModuleType(f"fake_{name}")
    module.__file__ = f"/nowhere/fake_{name}/__init__.py"
    monkeypatch.setitem(sys.modules, module.__name__, module)
    return _EntryPoint(name, f"{module.__name__}:FAMILY", lambda: family)


def _load_with(monkeypatch, *eps: _EntryPoint) -> dict[str, Family]:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(family_module, "entry_points", lambda group: list(eps))
    return family_module._load()


def _family(name: str, **extra) -> Family:  # type: ignore[no-untyped-def]
    return Family(**{"name": name, "label": name.upper(), "tasks": f"fake_{name}", "task_prefixes": (f"{name}/",),
                     **extra})


def test_families_load_in_order_with_their_folder(monkeypatch):
    loaded = _load_with(monkeypatch, _plugin(monkeypatch, "b", _family("b")),
                        _plugin(monkeypatch, "a", _family("a", order=5)))
    assert list(loaded) == ["a", "b"] and str(loaded["a"].folder).endswith("fake_a")
    assert loaded["b"].claims("b/x") and not loaded["b"].claims("a/x")


def test_a_plugin_that_does_not_import_is_one_line(monkeypatch):
    def broken():  # type: ignore[no-untyped-def]
        raise ImportError("no module named shiny")

    with pytest.raises(FamilyError, match=r"family plugin x \(fake_x:FAMILY\) does not load: ImportError: no module"):
        _load_with(monkeypatch, _EntryPoint("x", "fake_x:FAMILY", broken))


@pytest.mark.parametrize(("entry", "family", "message"), [
    ("x", object(), "is a object, not a Family"),
    ("x", _family("y"), "calls itself 'y'"),
])
def test_a_plugin_that_is_not_its_family_is_refused(monkeypatch, entry, family, message):
    with pytest.raises(FamilyError, match=message):
        _load_with(monkeypatch, _plugin(monkeypatch, entry, family))


def test_two_families_claiming_one_column_are_refused(monkeypatch):
    column = {"shared": Metric(type="int64", meaning="m")}
    with pytest.raises(FamilyError, match="'shared' is declared by both a and b"):
        _load_with(monkeypatch, _plugin(monkeypatch, "a", _family("a", metrics=column)),
                   _plugin(monkeypatch, "b", _family("b", metrics=column)))


def test_no_family_at_all_says_how_to_install(monkeypatch):
    with pytest.raises(FamilyError, match="pip install -e"):
        _load_with(monkeypatch)


def test_a_family_column_may_not_take_a_core_columns_name(monkeypatch):
    from masgrid._private.platform.results import table_schemas as records

    for name in ("sr", "task", "status"):
        monkeypatch.setattr(records, "family_metrics", lambda name=name: {name: Metric(type="float64", meaning="m")})
        with pytest.raises(FamilyError, match=f"reuse masgrid's own column names: {name}"):
            records._run_metrics()


def test_task_prefixes_must_end_with_a_slash():
    with pytest.raises(ValueError, match="must end with '/'"):
        _family("a", task_prefixes=("a",))


def test_an_option_block_without_defaults_is_refused():
    class Needs(BaseModel):
        rate: float  # no default: a run that omits the block could not be built

    with pytest.raises(ValidationError, match="Needs must build with no arguments"):
        _family("x", options=Needs)


def test_a_broken_plugin_is_one_line_from_every_command(tmp_path):
    """An installed distribution whose entry point names a missing module: the CLI says so in
    one line and exits 2, before Hydra (whose plugin discovery would only warn)."""
    info = tmp_path / "broken_fam-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: broken-fam\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[masgrid.families]\nbroken = broken_fam_missing.family:FAMILY\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")])}
    for argv in (["run", "agents=2"], ["run", "-m", "agents=2,3", f"results_dir={tmp_path / 'r'}"], ["families"]):
        done = subprocess.run([sys.executable, "-m", "masgrid._private.platform.commands.cli", *argv], env=env,
                              capture_output=True, text=True, timeout=120)
        assert done.returncode == 2, (argv, done.stderr)
        assert done.stderr.strip().splitlines() == [
            "masgrid: family plugin broken (broken_fam_missing.family:FAMILY) does not load: "
            "ModuleNotFoundError: No module named 'broken_fam_missing'"], argv
    assert not (tmp_path / "r").exists()


def test_an_option_block_may_not_take_a_run_config_field(monkeypatch):
    from masgrid._private.platform.run import config

    class Opts(BaseModel):
        x: int = 0

    monkeypatch.setattr(config, "families", lambda: {"seed": _family("seed", options=Opts)})
    with pytest.raises(FamilyError, match="seed would replace RunConfig's own field"):
        config._run_config_class()
