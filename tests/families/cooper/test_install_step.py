"""The Makefile's sandbox-deps recipe: installs bubblewrap as root, else prints one line.

`make` may be absent where the tests run, so the recipe is expanded here the way make
expands it (`$$` -> `$`, `$(BWRAP_HINT)` -> its value, backslash-newline joins) and run by
/bin/sh with stand-ins for `id` and `apt-get` first on PATH and no `bwrap` anywhere.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]


def recipe() -> tuple[str, str]:
    text = (ROOT / "Makefile").read_text()
    hint = re.search(r"^BWRAP_HINT := (.*)$", text, re.M)
    body = re.search(r"^sandbox-deps:\n((?:\t.*\n)+)", text, re.M)
    assert hint and body, "Makefile has no sandbox-deps recipe"
    script = "".join(line[1:] for line in body.group(1).splitlines(keepends=True))
    script = script.replace("\\\n", " ").lstrip("@").replace("$(BWRAP_HINT)", hint.group(1)).replace("$$", "$")
    return script, hint.group(1)


def run(script: str, tmp_path: Path, uid: int, apt_ok: bool) -> tuple[str, str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "apt.log"
    (bin_dir / "id").write_text(f"#!/bin/sh\necho {uid}\n")
    (bin_dir / "apt-get").write_text(f'#!/bin/sh\necho "$@" >> {log}\nexit {0 if apt_ok else 100}\n')
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    proc = subprocess.run(["/bin/sh", "-c", script], env={"PATH": str(bin_dir)}, capture_output=True, text=True)
    assert proc.returncode == 0
    return proc.stdout, log.read_text() if log.exists() else ""


@pytest.mark.parametrize(("uid", "apt_ok", "says_hint", "apt_calls"), [
    (1000, True, True, ""),
    (0, True, False, "install -y bubblewrap\n"),
    (0, False, True, "install -y bubblewrap\nupdate\n"),
])
def test_install_step(tmp_path: Path, uid: int, apt_ok: bool, says_hint: bool, apt_calls: str) -> None:
    script, hint = recipe()
    out, calls = run(script, tmp_path, uid, apt_ok)
    assert out == (hint + "\n" if says_hint else "")
    assert calls == apt_calls
    assert "apt-get install -y bubblewrap" in hint
