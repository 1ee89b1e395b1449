"""A family's own files (prompts, catalogs, presets) under its conf folder, read once and
re-read when the conf is reloaded."""

from masgrid._private.resources import conf_cached, conf_dir, conf_file, read_text

__all__ = ["conf_cached", "conf_dir", "conf_file", "read_text"]
