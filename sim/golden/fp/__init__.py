"""Golden models of the float units (mirrors hw/fp)."""
