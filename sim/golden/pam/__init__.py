"""Golden models of the PAM units (mirrors hw/pam)."""
