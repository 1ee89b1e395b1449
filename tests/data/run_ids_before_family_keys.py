"""Run ids and point ids of configs across every family, computed by the code of the checkout
it runs in; written once before mode and graph moved into their families' blocks."""
import json
import sys
from masgrid._private.platform.run.config import RunConfig

CASES = [
    {"task": "sorting"}, {"task": "sorting", "mode": "desc", "agents": 4, "k": 3},
    {"task": "max", "mode": "asc", "seed": 5}, {"task": "prefix_sum", "mode": "near_desc", "protocol": "kv"},
    {"task": "sorting", "mode": "random", "condition": "camoc", "agents": 3, "k": 2},
    {"task": "sorting", "mode": "near_asc", "topology": {"kind": "ring"}, "agents": 6},
    {"task": "agentsnet/coloring", "graph": "ws", "agents": 8},
    {"task": "agentsnet/matching", "graph": "ba", "agents": 8, "seed": 3},
    {"task": "agentsnet/leader_election", "graph": "dt", "agents": 16, "agentsnet": {"rounds": 4}},
    {"task": "agentsnet/consensus", "graph": "ws", "agents": 4, "agentsnet": {"byzantine": "aware"}},
    {"task": "agentsnet/coloring", "agents": 6, "topology": {"kind": "ring"}},
    {"task": "silo/I-01", "agents": 4}, {"task": "silo/II-13", "agents": 5, "protocol": "kv"}, {"task": "silo/III-22", "agents": 4, "seed": 2},
    {"task": "silo/I-01", "agents": 4, "mode": "desc"},
    {"task": "simas/mmlu", "agents": 4, "simas": {"subject": "college_physics"}},
    {"task": "simas/aime", "agents": 3}, {"task": "simas/ekar", "agents": 3, "mode": "desc"},
    {"task": "relay/sum", "agents": 3}, {"task": "relay/sum", "agents": 3, "mode": "asc"},
]


def main(out: str) -> None:
    rows = []
    for case in CASES:
        try:
            cfg = RunConfig.from_mapping(case)
        except Exception as exc:
            print("skip", case, type(exc).__name__, str(exc)[:200], file=sys.stderr)
            continue
        rows.append({"config": case, "run_id": cfg.run_id, "point_id": cfg.point_id})
    with open(out, "w") as fh:
        json.dump(rows, fh, indent=1, sort_keys=True)
        fh.write("\n")
    print(len(rows), "cases")


main(sys.argv[1])
