"""Who may talk to whom: the topology settings and the graph measures families report."""

from masgrid._private.envs.topology import TopologySettings, diameter, distances, neighbor_lists, restricted_edges

__all__ = ["TopologySettings", "diameter", "distances", "neighbor_lists", "restricted_edges"]
