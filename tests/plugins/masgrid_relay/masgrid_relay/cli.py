"""`masgrid relay-total --agents N --k K --seed S`: print an instance's true total."""

from __future__ import annotations

import argparse

import masgrid


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="masgrid relay-total")
    parser.add_argument("--agents", type=int, default=3)
    parser.add_argument("--k", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    ns = parser.parse_args(argv)
    instance = masgrid.get_task("relay/sum").generate(ns.agents, ns.k, ns.seed)
    print(instance.meta["total"])
    return 0
