"""The PAM system: the PAMattention flow and the system model."""
