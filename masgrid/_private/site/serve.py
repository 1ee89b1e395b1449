"""`masgrid view RESULTS_DIR [--port P]`: serve the report site on 127.0.0.1 only.

The site is static (it also opens from disk); serving it is for a browser on another machine
through an SSH tunnel, or for a browser that restricts file:// pages. It is built first when
RESULTS_DIR/report/site does not exist yet (or with --rebuild).
"""

from __future__ import annotations

import argparse
import functools
import sys
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import NoReturn

HOST = "127.0.0.1"
USAGE = "masgrid view RESULTS_DIR [--port P] [--rebuild]"


class ViewError(Exception):
    """Bad input: one line, exit status 2."""


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        raise ViewError(message)


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


def site_dir(results_dir: Path, rebuild: bool = False) -> Path:
    """The site folder of a results directory, built when missing (or asked)."""
    if not (results_dir / "runs").is_dir():
        raise ViewError(f"{results_dir} is not a results directory (no runs/ in it)")
    site = results_dir / "report" / "site"
    if rebuild or not (site / "index.html").is_file():
        from masgrid._private.site.build import build_site

        try:
            build_site(results_dir, site)
        except ValueError as exc:
            raise ViewError(str(exc)) from None
    return site


def make_server(site: Path, port: int) -> ThreadingHTTPServer:
    """An HTTP server for `site` on 127.0.0.1:`port` (0: any free port). OSError if taken."""
    handler = functools.partial(_Quiet, directory=str(site))
    return ThreadingHTTPServer((HOST, port), handler)


def view_command(argv: list[str]) -> int:
    parser = _Parser(prog="masgrid view", usage=USAGE, description=__doc__.splitlines()[0])
    parser.add_argument("results_dir", type=Path)
    parser.add_argument("--port", type=int, default=8765, help="port on 127.0.0.1 (0: any free one; default 8765)")
    parser.add_argument("--rebuild", action="store_true", help="build the site again before serving it")
    try:
        args = parser.parse_args(argv)
        if not 0 <= args.port <= 65535:
            raise ViewError(f"--port: 0..65535, not {args.port}")
        site = site_dir(args.results_dir, args.rebuild)
        try:
            server = make_server(site, args.port)
        except OSError as exc:
            raise ViewError(f"cannot listen on {HOST}:{args.port}: {exc.strerror or exc}") from None
    except ViewError as exc:
        print(f"masgrid view: {exc}", file=sys.stderr)
        return 2
    print(f"masgrid view: serving {site} at http://{HOST}:{server.server_port}/ (Ctrl-C stops)", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0
