"""A writable copy of every config file (core and each family's), for tests that edit prompts.

Pointing `$MASGRID_CONF` at the copy makes its files shadow the installed ones (resources
reads the core tree first), which is how a researcher overrides a family's prompt."""

from __future__ import annotations

import shutil
from pathlib import Path

from masgrid._private.resources import conf_dir, conf_files


def copy_all_conf(dest: Path) -> Path:
    shutil.copytree(conf_dir(), dest)
    for relative, path in conf_files(""):
        target = dest / relative
        if not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(path, target)
    return dest
