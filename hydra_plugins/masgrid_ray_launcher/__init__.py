"""masgrid's Hydra launcher: a multirun grid executed as concurrent driver actors on Ray.

`hydra_plugins` is a namespace package (no __init__.py); Hydra imports every module under
it at start-up, which registers `hydra/launcher=masgrid_ray` in its ConfigStore.
"""
