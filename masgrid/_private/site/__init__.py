"""The static report site: `masgrid report` builds it, `masgrid view` serves it (docs/report.md)."""
