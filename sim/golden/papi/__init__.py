"""Golden models of the PAPI units (mirrors hw/papi)."""
