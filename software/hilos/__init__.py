"""The HILOS system: the attention-kernel flow and the system model."""
