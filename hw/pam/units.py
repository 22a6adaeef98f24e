"""Registration of the PAM units with their families (each group registers in its own module)."""
import importlib

for _name in ("units_pu", "units_ru"):
    try:
        importlib.import_module(f"pimforge.hw.pam.{_name}")
    except ModuleNotFoundError as _e:  # TODO(lead): strict once both exist
        if _e.name != f"pimforge.hw.pam.{_name}":
            raise
