"""Model phases: a sweep over models that do not fit on the cluster together deploys them in
phases (docs/model-phases.md). demand: what a preset reserves; capacity: what the cluster
has and what fits; plan: the phases; runner: executing them; cluster_state: the cluster-wide
lock and the apps phased sweeps deployed."""
