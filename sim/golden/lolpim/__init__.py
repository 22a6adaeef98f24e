"""Golden models of the LoL-PIM units (mirrors hw/lolpim)."""
