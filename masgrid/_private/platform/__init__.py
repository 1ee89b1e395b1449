"""Run lifecycle: config schema, driver actor and schedulers, recorder, sweeps, CLI."""
