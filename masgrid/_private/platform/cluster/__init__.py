"""The cluster and its model endpoints: this process's connection to Ray (ray_session), the
persistent local Ray head (head), a Serve app deployed when missing (serve_apps), whether an
engine still answers (engine_alive), and resetting an engine's prefix cache."""
