"""`python -m masgrid`: the `masgrid` command, for places without the console script on PATH
(`ray job submit -- python -m masgrid run ...`, a cluster node's setup commands)."""

from masgrid._private.platform.commands.cli import main

if __name__ == "__main__":
    raise SystemExit(main())
