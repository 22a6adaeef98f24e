"""What the HILOS system model assumes where the paper gives no figure: (parameter, value, why)."""
from __future__ import annotations

from pimforge.software import devices as dev
from pimforge.software import workloads as wl
from pimforge.software.devices import GB
from pimforge.software.hilos.config import (
    B_PCI, CPU_ATTN_BW, DMA_ROW_S, DRAM_BW, DRAM_CHANNELS, DRAM_EFF, DRAM_RESERVE, HOST_CALL_S,
    PAGE_WRITE_OP_S
)

__all__ = ["assumptions"]

# the shared device assumptions (devices.assumptions) that HILOS's model relies on
SHARED = ("GPU achievable fraction", "link efficiency", "SmartSSD P2P read", "SmartSSD write",
          "SmartSSD FPGA DRAM efficiency")


def _own() -> list:
    return [
        ("host DRAM bandwidth", f"{DRAM_CHANNELS} x 25.6 = {DRAM_BW / GB:.1f} GB/s, "
         f"{DRAM_EFF:.0%} achievable", "Table 1 gives DDR4-3200 and a Xeon Gold 6342 (8 "
         "channels); efficiency not given"),
        ("DRAM reserve", f"{DRAM_RESERVE:.0%} of 512 GB", "OS, pinned buffers and activations; "
         "not given"),
        ("CPU attention rate (FlexGen)", f"{CPU_ATTN_BW / GB:g} GB/s of fp16 KV",
         "not given; FlexGen's CPU attention converts fp16 KV and runs PyTorch bmm; chosen so "
         "HILOS(4) lands near FLEX(DRAM) as §6.3 reports (tuned)"),
        ("FLEX(SSD) read vs CPU attention", "serialized", "the CPU runs both the buffered file "
         "I/O and attention; FlexGen's overlap is not quantified"),
        ("B_PCI (X-cache host path)", f"{B_PCI / GB:g} GB/s, fixed in N",
         "§6.4 gives only B_SSD / B_PCI ~ 3 at 8 devices: 8 x 3.0 / 3"),
        ("SmartSSD page write op", f"{PAGE_WRITE_OP_S * 1e6:g} us per 4 KiB or sub-page write "
         "(~70K random-write IOPS)", "not given; it prices the sub-page writes of ANS (issued "
         "one by one by the host, on the critical path) and the partial-page spills of c < 16"),
        ("host buffering cost (writeback)", f"{HOST_CALL_S * 1e6:g} us per layer and "
         f"{DMA_ROW_S * 1e9:g} ns per buffered V row (one scattered DMA each), plus the "
         "buffered K read at DRAM speed and the buffered V + scores over the chassis link, "
         "before the layer's kernel starts", "not given (§7 mentions software overhead "
         "growing with c)"),
        ("page write amplification", "one 4 KiB page per sub-page entry; a spill of c entries "
         "takes ceil(c x 256 B / 4 KiB) pages", "§4.3 gives 256-B entries and 4-KiB pages"),
        ("weights of >100B models", "striped over the storage devices (SmartSSDs for HILOS, "
         "the RAID for the baselines), sharing their flash bandwidth", "§6.1 says only "
         "'offloaded to storage'"),
        ("decoding context", "s + n / 2 per step (mean over the n steps)", "first-order"),
        ("prefill", "left out of decode throughput; with prefill = true: GPU roofline, weight "
         "load and KV write, overlapped", "Figure 10 reports decoding throughput"),
        ("kernel d_group mapping", "groups 1..8 run natively; larger groups as their largest "
         "divisor <= 8 with more passes", "hw/hilos/config.py allows d_group 1..8"),
        ("X-cache for GQA", "alpha = 0 when S_KV <= S_X", "§4.2's formula assumes S_KV = 2 S_X "
         "(MHA)"),
        ("GPU", "A100 40GB (Figure 10's GPU is not stated)", "§3 uses the A100 server"),
        ("X-cache K/V regeneration FLOPs", "2 x hidden x (2 x kv_heads x d) per cached token "
         "and layer (4 s h^2 for MHA)", "§4.2's T_GPU formula writes 2 s h^2; we count both W_K "
         "and W_V at 2 FLOPs per MAC"),
        ("FLEX(16 SSDs) read path", "16 x min(3.0 GB/s, PCIe 3.0 x4 at 80%), capped by the "
         "chassis x16 link at 80%", "§5.3, §6.1; no switch overhead is given"),
        ("GPU memory", "not a limit (K/V regeneration streamed in chunks)", "simplification"),
    ]


def assumptions() -> list:
    """(parameter, value, why) for everything the paper does not give, plus the shared ones."""
    shared = [a for a in dev.assumptions() if a[0] in SHARED]
    return _own() + shared + list(wl.assumptions())
