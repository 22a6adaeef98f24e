"""cocotb benches of the PAPI units (mirrors hw/papi)."""
