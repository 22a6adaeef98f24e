"""Sweep specs that ship with pimforge: `pimforge sweep NAME` runs one (docs/guide/sweeps.md)."""
