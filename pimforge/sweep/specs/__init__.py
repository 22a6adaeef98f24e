"""Sweep specs that ship with pimforge: `pimforge sweep NAME` runs one (README, "Design-space sweeps")."""
