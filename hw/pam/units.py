"""Registration of the PAM units with their families (each group registers in its own module)."""
from pimforge.hw.pam import units_device, units_pu, units_ru  # noqa: F401  (they register)
