"""The HILOS configs (hw/hilos/config.py): the facts the golden model and the software flows read
from them, and the clock they no longer take."""
import pytest

from pimforge.base.errors import UserError
from pimforge.base.formats import FP16, FP32
from pimforge.hw.hilos.config import (
    BEAT_ELEMS, BLOCKS, D_GROUPS, HEAD_DIMS, MASK_VALUE, SCORE_FMTS, HilosAttentionConfig,
    TwoPassSoftmaxConfig
)
from pimforge.registry import get_unit
from pimforge.sim.golden.hilos import common as h_common
from pimforge.software.hilos import attention as sw_att
from pimforge.software.hilos import config as sw_cfg

UNITS = ["qk_gemv", "two_pass_softmax", "sv_gemv", "hilos_attention"]


@pytest.mark.parametrize("unit", UNITS)
def test_clock_mhz_is_an_unknown_field(unit):
    """The clock has no effect on the RTL or the cycle models: the SmartSSD's kernel clock lives
    in software/devices.py (SMARTSSD.clock_mhz)."""
    with pytest.raises(UserError) as e:
        get_unit(unit).config(None, {"clock_mhz": 300.0})
    assert f"{unit}: unknown field 'clock_mhz'" in str(e.value)
    assert not hasattr(get_unit(unit).default_config(), "clock_mhz")


def test_the_kernels_facts_are_stated_once():
    assert SCORE_FMTS == {"fp32": FP32, "fp16": FP16}
    assert (BLOCKS, BEAT_ELEMS, HEAD_DIMS) == ((32, 64, 128), (8, 16, 32), (64, 128))
    assert D_GROUPS == tuple(range(1, 9))
    assert MASK_VALUE == -1e4
    assert TwoPassSoftmaxConfig().mask_value == HilosAttentionConfig().mask_value == MASK_VALUE
    # the golden model and the software flows read them from hw/hilos/config.py
    assert h_common.MASK_VALUE is MASK_VALUE
    assert sw_att.SCORE_FMTS is SCORE_FMTS
    assert sw_att.BLOCKS is BLOCKS and sw_att.BEAT_ELEMS is BEAT_ELEMS
    assert sw_cfg.SUPPORTED_GROUPS is D_GROUPS and sw_cfg.SUPPORTED_HEAD_DIMS is HEAD_DIMS
