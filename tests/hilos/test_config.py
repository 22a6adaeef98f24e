"""The HILOS configs (hw/hilos/config.py): the clock they no longer take."""
import pytest

from pimforge.base.errors import UserError
from pimforge.registry import get_unit

UNITS = ["qk_gemv", "two_pass_softmax", "sv_gemv", "hilos_attention"]


@pytest.mark.parametrize("unit", UNITS)
def test_clock_mhz_is_an_unknown_field(unit):
    """The clock has no effect on the RTL or the cycle models: the SmartSSD's kernel clock lives
    in software/devices.py (SMARTSSD.clock_mhz)."""
    with pytest.raises(UserError) as e:
        get_unit(unit).config(None, {"clock_mhz": 300.0})
    assert f"{unit}: unknown field 'clock_mhz'" in str(e.value)
    assert not hasattr(get_unit(unit).default_config(), "clock_mhz")
