"""cocotb benches of the LoL-PIM units (mirrors hw/lolpim)."""
