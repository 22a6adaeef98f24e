"""cocotb benches of the float units (mirrors hw/fp)."""
