"""``pimforge model hilos``: the configuration and its presets, the HILOS testbed (Table 1,
§5.3, §6.1), the systems of Figure 10 and the sweep grids."""
from __future__ import annotations

from dataclasses import dataclass

from pimforge.base.config import UnitConfig, param
from pimforge.hw.hilos.config import D_GROUPS, HEAD_DIMS
from pimforge.software import devices as dev
from pimforge.software import workloads as wl
from pimforge.software.devices import GB

__all__ = ["HilosModelConfig", "PRESETS", "SYSTEMS", "DEVICE_COUNTS", "CONTEXTS", "ALPHAS",
           "SPILLS", "HOST_DIMMS", "HOST_DRAM", "DRAM_CHANNELS", "DRAM_BW", "DRAM_EFF",
           "DRAM_RESERVE", "CPU_ATTN_BW", "WEIGHTS_ON_STORAGE", "GPU_LINK", "CHASSIS_LINK",
           "SSD_LINK", "SMART_HOST_LINK", "N_FLEX_SSD", "N_FLEX16", "DEFAULT_DEVICES", "PAGE",
           "B_SSD_OVER_B_PCI", "B_PCI", "PAGE_WRITE_OP_S", "DMA_ROW_S", "HOST_CALL_S",
           "SUPPORTED_GROUPS", "SUPPORTED_HEAD_DIMS"]

# --- HILOS testbed (Table 1, §5.3, §6.1) ------------------------------------------------------
HOST_DIMMS = 16                     # Table 1: 16 x 32 GB DDR4-3200
HOST_DRAM = HOST_DIMMS * 32 * GB
DRAM_CHANNELS = 8                   # assumed: Xeon Gold 6342 (Table 1) has 8 DDR4-3200 channels
DRAM_BW = DRAM_CHANNELS * 25.6 * GB  # 204.8 GB/s peak
DRAM_EFF = 0.7                      # assumed achievable fraction of DRAM peak
DRAM_RESERVE = 0.10                 # assumed: OS, pinned staging buffers, activations
CPU_ATTN_BW = 12.0 * GB             # assumed: KV bytes/s FlexGen's fp16 CPU attention processes
WEIGHTS_ON_STORAGE = 100e9          # §6.1: models over 100B parameters keep weights in storage
GPU_LINK = dev.LINKS["PCIe4x16"]    # §6.1: GPU on PCIe 4.0 x16
CHASSIS_LINK = dev.LINKS["PCIe4x16"]  # §5.3: the expansion chassis has 16 PCIe 4.0 lanes
SSD_LINK = dev.LINKS["PCIe4x4"]     # §6.1: each PM9A3 on its own PCIe 4.0 x4
SMART_HOST_LINK = dev.LINKS["PCIe3x4"]  # §7.1 / devices: each SmartSSD's PCIe 3.0 x4 lanes
N_FLEX_SSD = 4                      # §6.1: four PM9A3 in RAID-0
N_FLEX16 = 16                       # §6.1: 16 SmartSSDs with the FPGAs disabled
DEFAULT_DEVICES = 8                 # §6.1: HILOS runs 8 SmartSSDs by default
PAGE = 4096                         # §4.3, §6.4: 4 KiB SSD page
B_SSD_OVER_B_PCI = 3.0              # §6.4: profiled B_SSD / B_PCI ~ 3 at the default 8 devices
# §4.2: B_PCI is the profiled effective host path of the X-cache (GDS to the GPU); the paper gives
# only the ratio, so B_PCI = 8 devices x P2P bandwidth / 3 (fixed: it does not grow with N).
B_PCI = DEFAULT_DEVICES * dev.SMARTSSD.p2p_bw / B_SSD_OVER_B_PCI
PAGE_WRITE_OP_S = 14e-6             # assumed: one 4 KiB (or sub-page) write op on a SmartSSD's
#   SSD, ~70K random-write IOPS of its PCIe 3.0 drive (not given); page writes take
#   max(PAGE / write_bw, this)
DMA_ROW_S = 0.05e-6                 # assumed: fixed cost of one scattered 256-B V-row DMA
#   (buffered rows of a head are not contiguous in the host's token-major buffer)
HOST_CALL_S = 20e-6                 # assumed: host software overhead per layer for the buffered
#   tokens (PyTorch QK^T call and DMA set-up, §4.3 / §7 "software overhead")
SUPPORTED_GROUPS = D_GROUPS             # the kernel's d_group range (hw/hilos/config.py)
SUPPORTED_HEAD_DIMS = HEAD_DIMS         # the kernel's head dimensions (hw/hilos/config.py)

# --- systems (§6.1) and sweep grids -------------------------------------------------------------
DEVICE_COUNTS = (4, 8, 16)          # HILOS(N) in Figure 10
SYSTEMS = ("FLEX(DRAM)", "FLEX(SSD)", "FLEX(16 SSDs)") + tuple(f"HILOS({k})" for k in DEVICE_COUNTS)
CONTEXTS = (8192, 16384, 32768, 65536, 131072)
ALPHAS = (0.0, 0.125, 0.25, 0.5, 0.75, 1.0)
SPILLS = (1, 2, 4, 8, 16, 32, 64, 128)


def _alpha_check(v, cfg):
    return None if v == -1.0 or 0.0 <= v <= 1.0 else "-1 (automatic, §4.2) or 0..1"


@dataclass(frozen=True)
class HilosModelConfig(UnitConfig):
    """One HILOS system-model configuration (HILOS §6.1 defaults)."""

    UNIT = "model hilos"
    model: str = param("OPT-175B", "LLM (workloads.MODELS)", choices=tuple(wl.MODELS))
    gpu: str = param("A100", "GPU roofline (Table 1: A100 40GB or H100 80GB)",
                     choices=("A100", "H100"))
    batch: int = param(16, "batch size b (§6.1 default 16)", lo=1, hi=1024)
    output_len: int = param(64, "generated tokens n (§6.1 default 64)", lo=1, hi=8192)
    context: int = param(32768, "input context s in tokens", lo=128, hi=1048576)
    smartssds: int = param(DEFAULT_DEVICES, "SmartSSDs N (§6.1 default 8; the chassis holds 16)",
                           lo=1, hi=N_FLEX16)
    alpha: float = param(-1.0, "X-cache fraction alpha; -1 = automatic (§4.2 formula, nearest "
                         "power of two)", lo=-1.0, hi=1.0, check=_alpha_check)
    spill_interval: int = param(16, "delayed-writeback spill interval c in tokens (§4.3)",
                                lo=1, hi=1024)
    xcache: bool = param(True, "cooperative X-cache (§4.2)")
    writeback: bool = param(True, "delayed KV cache writeback (§4.3)")
    prefill: bool = param(False, "include the prefill time in the throughput")
    sweep: str = param("all", "sweeps around the point", choices=(
        "all", "none", "context", "devices", "alpha", "spill"))
    seed: int = param(0, "seed (the model is deterministic; kept for CLI uniformity)", lo=0,
                      hi=2 ** 31 - 1)


PRESETS = {
    "default": {},
    "opt175b_128k": {"model": "OPT-175B", "context": 131072},
    "opt66b_64k": {"model": "OPT-66B", "context": 65536},
    "qwen32b_32k": {"model": "Qwen2.5-32B", "context": 32768},
    "small": {"model": "OPT-30B", "context": 8192, "output_len": 16, "sweep": "devices"},
}
