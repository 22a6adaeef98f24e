"""cocotb benches of the HILOS kernel units (mirrors hw/hilos)."""
