"""cocotb benches of the PAM units (mirrors hw/pam)."""
