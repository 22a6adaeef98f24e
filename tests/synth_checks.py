"""The small configs the synthesis tests share (test_synth_smoke.py, test_ready_paths.py).

One table, so that a unit's smoke synthesis and its ready-path analysis elaborate the same
Verilog: the run's shared synthesis cache (``synth_cache`` in conftest.py) then synthesizes the
unit once for both.  Big units synthesize a small config, all at operator depth 1, so the float
operators they share are synthesized once too.
"""
from pimforge import api

_HILOS_SMALL = {"beat_elems": 8, "head_dim": 64, "block": 32, "d_group": 1, "op_depth": 1}
SMALL_SYNTH = {
    "pam_pu": (None, {"lanes": 4, "head_dim": 64, "op_depth": 1}),
    "pam_ru": (None, {"vector_width": 4, "head_dim": 64, "op_depth": 1}),
    "qk_gemv": (None, _HILOS_SMALL), "sv_gemv": (None, _HILOS_SMALL),
    "two_pass_softmax": (None, _HILOS_SMALL), "hilos_attention": (None, _HILOS_SMALL),
    "pam_device": ("small", {"op_depth": 1}), "pam_system": ("small", {"op_depth": 1}),
    "online_softmax": (None, {"op_depth": 1}),
    "hermes_gemv": (None, {"multipliers": 8, "serial_cycles": 8, "beat_words": 1,
                           "max_batch": 2, "buffer_bytes": 512, "op_depth": 1}),
    "hermes_act": (None, {"lanes": 4, "max_len": 64, "op_depth": 1}),
    "lolpim_dispatcher": ("small", {}),
}
"""``unit -> (preset, overrides)``; a unit not listed synthesizes its default config."""


def small_synth_config(unit: str, table: dict = SMALL_SYNTH):
    """``(preset, config)`` of ``unit`` in ``table`` (the default config if it is not listed)."""
    preset, over = table.get(unit, (None, {}))
    return preset, api.config(unit, preset=preset, overrides=over)
