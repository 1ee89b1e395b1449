"""masgrid's implementation, private in Ray's `serve/_private` sense.

Nothing here is a stable interface: names move between releases. Notebooks and scripts
use `masgrid` (run, sweep, load_results, report, RunConfig, Family); family packages use
`masgrid.task_api`. Built-in families live beside this package and may import from it.
"""
