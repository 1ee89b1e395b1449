"""The results tables: their schemas, the Parquet recorder, one writer per results directory,
rows made storable, storage errors, and the generated schema doc."""
