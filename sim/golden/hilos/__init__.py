"""Golden models of the HILOS kernel units (mirrors hw/hilos)."""
