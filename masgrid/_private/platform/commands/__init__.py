"""The `masgrid` command line: run, serve, cache, instance/score, show, and where logs go."""
