"""The PAM system: the PAMattention flow (attention.py) and the system model."""
