"""``pimforge sweep``: design-space exploration of a unit or a system model on Dask distributed."""
