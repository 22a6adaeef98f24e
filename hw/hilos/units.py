"""Registration of the HILOS units with their families (each unit registers in its own module)."""
from pimforge.hw.hilos import units_attention, units_qk, units_softmax, units_sv  # noqa: F401
