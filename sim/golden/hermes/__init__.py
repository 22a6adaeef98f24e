"""Golden models of the Hermes NDP-DIMM units (mirrors hw/hermes)."""
