"""benchmarks/cpu_by_command.py sums dump-acct listings: checked against sums computed here by
walking each root's children downwards, on random process trees, and on lines as dump-acct
writes them."""

from __future__ import annotations

import random

from benchmarks.cpu_by_command import by_command, by_root, parse, report

#: three lines of a real `dump-acct` listing (acct 6.6, Debian 12), as it pads them
REAL = """\
accton          |v3|     0.00|     0.00|     0.00|     0|     0|  2476.00|     0.00|   29113|   29098|S    |       0|__      |Sat Dec  5 19:30:50 2026
ray::IDLE       |v3|    46.00|    10.00|   414.00|     0|     0|8294400.00|     0.00|   31406|   29994|S   X|       1|__      |Sat Dec  5 19:34:25 2026
resolver-execut |v3| 35640.00|  2341.00|162486.00|     0|     0|4825088.00|     0.00|   29542|   29538|S   X|       0|__      |Sat Dec  5 19:33:29 2026
"""


def test_real_lines() -> None:
    procs = parse(REAL + "not a record\n")
    assert [p.command for p in procs] == ["accton", "ray::IDLE", "resolver-execut"]
    idle = procs[1]
    assert (idle.pid, idle.ppid) == (31406, 29994) and abs(idle.cpu_s - 0.56) < 1e-9 and abs(idle.wall_s - 4.14) < 1e-9
    assert abs(procs[2].cpu_s - 379.81) < 1e-9


def line(command: str, user: int, system: int, pid: int, ppid: int) -> str:
    return (f"{command:<16}|v3|{user:9.2f}|{system:9.2f}|{user + system + 7:9.2f}|     0|     0|  1000.00|     0.00|"
            f"{pid:8d}|{ppid:8d}|     |       0|__      |Sat Dec  5 19:30:50 2026")


def test_sums_match_a_walk_down_the_tree() -> None:
    for seed in range(30):
        rng = random.Random(seed)
        pids = rng.sample(range(2, 60000), rng.randint(5, 120))
        parent = {pid: rng.choice([1, *pids[:i]]) if i else 1 for i, pid in enumerate(pids)}
        ticks = {pid: (rng.randint(0, 5000), rng.randint(0, 900)) for pid in pids}
        names = {pid: rng.choice(["python", "git", "ray::IDLE", "raylet"]) for pid in pids}
        text = "\n".join(line(names[p], *ticks[p], p, parent[p]) for p in rng.sample(pids, len(pids)))
        procs = parse(text)
        roots = {pid: f"r{i}" for i, pid in enumerate(rng.sample(pids, rng.randint(1, 4)))}

        children: dict[int, list[int]] = {}
        for pid, ppid in parent.items():
            children.setdefault(ppid, []).append(pid)
        claimed: dict[int, str] = {}
        # the nearest named ancestor wins: walk each root's subtree, stopping at other roots
        for root, name in roots.items():
            stack = [root]
            while stack:
                pid = stack.pop()
                claimed[pid] = name
                stack.extend(c for c in children.get(pid, []) if c not in roots)
        want: dict[str, float] = {}
        for pid in pids:
            name = claimed.get(pid, "other")
            want[name] = want.get(name, 0.0) + sum(ticks[pid]) / 100
        got = by_root(procs, roots)
        assert got.keys() == want.keys()
        assert all(abs(got[k][1] - want[k]) < 1e-6 for k in want)
        assert sum(n for n, _ in got.values()) == len(pids)

        per_name: dict[str, float] = {}
        for pid in pids:
            per_name[names[pid]] = per_name.get(names[pid], 0.0) + sum(ticks[pid]) / 100
        assert {k: round(v[1], 6) for k, v in by_command(procs).items()} == {k: round(v, 6) for k, v in per_name.items()}
        assert f"{len(pids):,} processes exited" in report(procs, roots)
