"""The Hermes system model (NDP-DIMM enhanced GPU, Liu et al.)."""
