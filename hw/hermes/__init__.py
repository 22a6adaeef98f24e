"""Hermes NDP-DIMM units (Hermes, HPCA 2025 §IV-A)."""
