"""``pimforge model hermes``: the Hermes testbed (§IV-A, §V-A, Table II), the config and its
presets, the systems of §V and the sweep grids."""
from __future__ import annotations

from dataclasses import dataclass

from pimforge.base.config import UnitConfig, param
from pimforge.hw.hermes.config import GEMV_PRESETS
from pimforge.software import devices as dev
from pimforge.software.devices import GB

__all__ = ["HermesModelConfig", "PRESETS", "SYSTEMS", "VARIANTS", "MODELS", "OPT_MODELS",
           "BATCHES", "DIMM_COUNTS", "MULTIPLIERS", "GPU", "CPU", "HOST_LINK", "DIMM_LINK",
           "DIMM_BYTES", "GPU_RESERVE", "SYNC_S", "KERNEL_S", "SPARSITY", "DEJAVU_PREDICTOR",
           "INPUT_LEN", "OUTPUT_LEN"]

GPU = dev.GPUS["RTX4090"]               # §V-A: one RTX 4090, 24 GB
CPU = dev.CPUS["i9-13900K"]             # §V-A: Hermes-host's CPU (PowerInfer's testbed)
HOST_LINK = dev.LINKS["PCIe4-Hermes"]   # §V-A: PCIe 4.0 at 64 GB/s
DIMM_LINK = dev.LINKS["DIMM-link"]      # §IV-A: 25 GB/s per DIMM-link
DIMM_BYTES = 32 * GB                    # Table II: 32 GB per DIMM
GPU_RESERVE = 2 * GB                    # assumed: CUDA context, activations, workspace
SYNC_S = 10e-6                          # assumed: one GPU <-> DIMM synchronisation (latency)
KERNEL_S = 5e-6                         # assumed: one GPU kernel launch
DEJAVU_PREDICTOR = 0.181                # §V-D, Fig. 12a: Deja Vu's MLP predictor, 18.1% of compute
INPUT_LEN = 128                         # §V-A: 128 input and 128 output tokens
OUTPUT_LEN = 128

# ReLU sparsity (fraction of neurons that do not fire) of the MLP block and of the QKV input
# (a ReLU inserted before QKV, §II-B).  §II-B gives 70-90% across models; the split is ours.
SPARSITY = {"OPT": (0.90, 0.70), "LLaMA2": (0.85, 0.70), "Falcon": (0.90, 0.70)}

MODELS = ("OPT-13B", "OPT-30B", "OPT-66B", "LLaMA2-13B", "LLaMA2-70B", "Falcon-40B")
OPT_MODELS = MODELS[:3]                 # §V-A: FlexGen and Deja Vu run OPT only
BATCHES = (1, 2, 4, 8, 16)
DIMM_COUNTS = (2, 4, 8, 16)             # Fig. 14
MULTIPLIERS = (32, 64, 128, 256, 512)   # Fig. 16 (hw presets hermes_m<N>; 256 = "hermes")
SYSTEMS = ("Accelerate", "FlexGen", "Deja Vu", "Hermes-host", "Hermes-base", "Hermes")
VARIANTS = ("random", "partition", "adjustment", "hermes")    # Fig. 13's ablation steps


def _gemv_check(v, cfg):
    return None if v in GEMV_PRESETS else ", ".join(GEMV_PRESETS)


@dataclass(frozen=True)
class HermesModelConfig(UnitConfig):
    """One Hermes system-model configuration (§V-A defaults)."""

    UNIT = "model hermes"
    model: str = param("LLaMA2-70B", "LLM (§V-A)", choices=MODELS)
    batch: int = param(1, "batch size (§V-A: 1-16)", lo=1, hi=16)
    input_len: int = param(INPUT_LEN, "prompt tokens (§V-A: 128)", lo=1, hi=4096)
    output_len: int = param(OUTPUT_LEN, "generated tokens (§V-A: 128)", lo=1, hi=4096)
    dimms: int = param(8, "NDP-DIMMs (§V-A: 8 x 32 GB)", choices=(1, 2, 4, 8, 16))
    gemv: str = param("hermes", "NDP GEMV engine preset of hw/hermes (hermes = 256 "
                      "multipliers; hermes_m32..m512 for Fig. 16)", check=_gemv_check)
    variant: str = param("hermes", "Hermes scheduling (Fig. 13): random placement, the offline "
                         "ILP partition, + online adjustment, + window remapping",
                         choices=VARIANTS)
    prefill: bool = param(True, "count the prefill in tokens/s (the paper's end-to-end rate, "
                          "§V-D: 33% of the time)")
    trace_neurons: int = param(2048, "neurons per simulated layer of the activation traces",
                               choices=(256, 512, 1024, 2048, 4096))
    sweep: str = param("all", "sweeps around the point", choices=("all", "none", "batch",
                                                                  "dimms", "multipliers"))
    seed: int = param(0, "seed of the activation traces", lo=0, hi=2 ** 31 - 1)


PRESETS = {
    "default": {},
    "llama2_70b": {"model": "LLaMA2-70B"},
    "opt66b": {"model": "OPT-66B"},
    "opt13b_b16": {"model": "OPT-13B", "batch": 16},
    "small": {"model": "OPT-13B", "trace_neurons": 512, "sweep": "none"},
}
