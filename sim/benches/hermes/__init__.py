"""cocotb benches of the Hermes NDP-DIMM units (mirrors hw/hermes)."""
