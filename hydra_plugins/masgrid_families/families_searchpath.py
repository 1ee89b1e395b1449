"""Hydra sees every installed benchmark family: each family's option block (with its pydantic
defaults) as the config node `masgrid_families`, which conf/config.yaml's defaults list
includes, and each family's own config folder (sweeps, model presets) on the search path.

Hydra imports this module when it discovers its plugins, in every process that composes a
configuration (the CLI, the compose API in tests and notebooks), so no caller has to remember it.
"""

from __future__ import annotations

from hydra.core.config_search_path import ConfigSearchPath
from hydra.core.config_store import ConfigStore
from hydra.plugins.search_path_plugin import SearchPathPlugin


def _register_defaults() -> None:
    from masgrid.family import FamilyError, families

    try:
        installed = families()
    except FamilyError:  # said in one line by whoever asks for the families next (the CLI, RunConfig)
        return
    node = {f.name: f.options().model_dump(mode="json") for f in installed.values() if f.options is not None}
    ConfigStore.instance().store(name="masgrid_families", node=node, provider="masgrid")


_register_defaults()


class MasgridFamiliesSearchPath(SearchPathPlugin):
    def manipulate_search_path(self, search_path: ConfigSearchPath) -> None:
        from masgrid.family import FamilyError, families

        try:
            installed = families()
        except FamilyError:
            return
        for family in installed.values():
            conf = family.conf_path()
            if conf is not None and conf.is_dir():
                search_path.append(provider=f"masgrid-family-{family.name}", path=f"file://{conf}")
