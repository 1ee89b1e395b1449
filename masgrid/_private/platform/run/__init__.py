"""The single run: its configuration (RunConfig), the driver that plays it through a schedule, the
metrics row and summary it leaves, its team and the actors it talks to."""
