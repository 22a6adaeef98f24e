"""The HILOS system model: offloaded batched decoding with attention near storage (HILOS)."""
