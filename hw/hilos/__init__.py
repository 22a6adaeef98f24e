"""HILOS near-storage attention kernel units (HILOS §4.4, Alg. 1, Fig. 7)."""
