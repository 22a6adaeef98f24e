"""The HILOS system: the attention-kernel flow (attention.py) and the system model."""
