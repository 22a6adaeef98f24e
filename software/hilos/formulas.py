"""The closed forms of HILOS: the traffic ratio (eq. 3), the X-cache ratio and its first-order
times (§4.2), the kernel's d_group mapping and the page cost of delayed writeback (§4.3)."""
from __future__ import annotations

import math

from pimforge.software.hilos.config import PAGE, SUPPORTED_GROUPS

__all__ = ["traffic_ratio", "alpha_opt", "round_pow2", "xcache_times", "t_effective",
           "kernel_group", "writeback_cost"]


def traffic_ratio(s: float, h: float = 1.0) -> float:
    """Eq. 3: interconnect traffic of the baseline over attention near storage,
    ``T_BASE / T_ANS = (4 s h + 4 h) / (2 h + 6 h) = (s + 1) / 2``."""
    return (4.0 * s * h + 4.0 * h) / (2.0 * h + 6.0 * h)


def alpha_opt(b_pci: float, b_ssd: float, kv_over_x: float = 2.0) -> float:
    """§4.2: the X-cache ratio with ``T_PCI = T_SSD``.  For ``S_KV = 2 S_X`` (MHA) it is
    ``2 B_PCI / (B_SSD + B_PCI)``; in general ``r B_PCI / (B_SSD + (r - 1) B_PCI)`` with
    ``r = S_KV / S_X``.  When ``r <= 1`` (GQA: the X-cache is not smaller than the KV cache) the
    X-cache only adds flash reads, so 0."""
    r = kv_over_x
    if r <= 1.0:
        return 0.0
    return min(1.0, r * b_pci / (b_ssd + (r - 1.0) * b_pci))


def round_pow2(a: float) -> float:
    """§4.2: the nearest of 1, 1/2, 1/4, ... (0 stays 0; below 1/1024 gives 0)."""
    if a <= 0.0:
        return 0.0
    cands = [2.0 ** -k for k in range(11)]
    return min(cands, key=lambda c: (abs(c - a), c))


def xcache_times(alpha: float, s: float, h: float, b_ssd: float, b_pci: float,
                 c_gpu: float) -> tuple:
    """§4.2 first-order model per transformer block (fp16): ``(T_GPU, T_SSD, T_PCI)`` with
    ``T_PCI = a s h 2 / B_PCI``, ``T_GPU = a s h^2 2 / C_GPU``,
    ``T_SSD = (a s h 2 + (1 - a) 2 s h 2) / B_SSD``."""
    t_pci = alpha * s * h * 2 / b_pci
    t_gpu = alpha * s * h * h * 2 / c_gpu
    t_ssd = (alpha * s * h * 2 + (1 - alpha) * 2 * s * h * 2) / b_ssd
    return t_gpu, t_ssd, t_pci


def t_effective(t_gpu: float, t_ssd: float, t_pci: float) -> float:
    """§4.2: the three overlap, ``T_effective = max(T_GPU, T_SSD, T_PCI)``."""
    return max(t_gpu, t_ssd, t_pci)


def kernel_group(d_group: int) -> tuple:
    """Kernel ``d_group`` for a model's GQA group and the passes per KV head: the RTL supports
    1..8 (hw/hilos/config.py); a larger group runs as its largest divisor <= 8, the KV head being
    read from FPGA DRAM once per pass."""
    if d_group in SUPPORTED_GROUPS:
        return d_group, 1
    g = max(k for k in SUPPORTED_GROUPS if d_group % k == 0)
    return g, d_group // g


def writeback_cost(c: int, entries: float, entry_bytes: float = 256.0,
                   page: int = PAGE) -> float:
    """Flash bytes written per step for ``entries`` new KV entries spilled every ``c`` steps
    in whole pages (§4.3): a spill of ``c`` entries of one head takes
    ``ceil(c * entry / page)`` pages, so ``c < page / entry`` rewrites partial pages."""
    pages = math.ceil(c * entry_bytes / page)
    return entries * pages * page / c
