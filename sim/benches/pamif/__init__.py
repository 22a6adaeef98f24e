"""Benches of the PAM interface units (mirrors hw/pamif)."""
