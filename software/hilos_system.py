"""HILOS end-to-end system model: offloading-based batched decoding with attention near storage.

The model follows HILOS (ASPLOS'26) §2.2, §4.1-4.3 and §6.1.  One decoding step of a batch of
``b`` sequences runs every layer; FlexGen-style offloading overlaps the resources across layers,
so a step takes as long as its busiest resource (``max``), plus whatever the design puts on the
critical path (HILOS without delayed writeback: synchronous sub-page KV writes).

Systems (§6.1):

* ``FLEX(DRAM)``: KV cache in host DRAM (512 GB, Table 1), attention on the CPU; the batch is cut
  to fit DRAM, OOM when one sequence does not fit.
* ``FLEX(SSD)``: KV cache on four PM9A3 SSDs in RAID-0 (each PCIe 4.0 x4); every step reads the
  whole KV cache into host memory for CPU attention.
* ``FLEX(16 SSDs)``: the SmartSSDs' own SSDs with their FPGAs off, behind the chassis x16 link.
* ``HILOS(N)``: attention near storage on N SmartSSDs (§4.1) split by batch x KV heads, the
  cooperative X-cache (§4.2) and delayed KV writeback (§4.3).  Each device's time is the larger
  of its flash (P2P) reads and its kernel's time from the ``hilos_attention`` cycle model
  (:func:`pimforge.software.calibration.hilos_job_cycles` via ``SMARTSSD.kernel_time``).

Throughput is ``b * n / (n * T_step [+ T_prefill])`` tokens/s; the prefill is left out unless
``prefill`` is set (Figure 14, output-length sweep).  Every figure the paper does not give is in
:func:`assumptions`.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from pimforge.base.config import UnitConfig, config_to_dict, param
from pimforge.software import devices as dev
from pimforge.software import workloads as wl
from pimforge.software.report import ModelResult, Plot, Progress, Row, Table

__all__ = ["PRESETS", "HilosModelConfig", "run_model", "reproduce", "traffic_ratio",
           "alpha_opt", "round_pow2", "xcache_times", "t_effective", "kernel_group",
           "StepTime", "step_hilos", "step_flex_dram", "step_flex_ssd", "writeback_cost",
           "assumptions", "SYSTEMS"]

GB = dev.GB

# --- HILOS testbed (Table 1, §5.3, §6.1) ------------------------------------------------------
HOST_DRAM = 16 * 32 * GB            # Table 1: 16 x 32 GB DDR4-3200
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
SUPPORTED_GROUPS = tuple(range(1, 9))   # hw/hilos/config.py: d_group 1..8
SUPPORTED_HEAD_DIMS = (64, 128)         # hw/hilos/config.py
SYSTEMS = ("FLEX(DRAM)", "FLEX(SSD)", "FLEX(16 SSDs)", "HILOS(4)", "HILOS(8)", "HILOS(16)")


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
    smartssds: int = param(8, "SmartSSDs N (§6.1 default 8; the chassis holds 16)", lo=1, hi=16)
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


# --- closed forms of the paper -----------------------------------------------------------------
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


# --- step times ---------------------------------------------------------------------------------
@dataclass
class StepTime:
    """One decoding step (all layers) of one system; ``parts`` are the overlapped resource
    times (s), ``serial`` what adds on top; ``batch`` the batch it ran (0 = OOM)."""

    system: str
    batch: int
    parts: dict
    serial: dict
    prefill: float = 0.0

    @property
    def oom(self) -> bool:
        return self.batch <= 0

    @property
    def step(self) -> float:
        if self.oom:
            return math.nan
        return max(self.parts.values()) + sum(self.serial.values())

    @property
    def bound(self) -> str:
        return "OOM" if self.oom else max(self.parts, key=self.parts.get)

    def throughput(self, n: int, with_prefill: bool) -> float:
        if self.oom:
            return math.nan
        return self.batch * n / (n * self.step + (self.prefill if with_prefill else 0.0))


def _weights_on_storage(m) -> bool:
    return m.params > WEIGHTS_ON_STORAGE


def _gpu_step(m, gpu, b: int, extra_flops: float = 0.0) -> float:
    """GPU work of a step: the weight GEMMs for ``b`` tokens (weights read once from HBM)."""
    return gpu.time(b * m.decode_flops() + extra_flops, m.weight_bytes)


def _prefill(m, gpu, b: int, s: int, write_bw: float) -> float:
    """Prefill (only with ``prefill``): weight load, GPU GEMMs and causal attention over the
    prompt, and the KV cache written to its tier; overlapped (assumed)."""
    flops = b * s * m.decode_flops() + b * m.attention_flops(s) / 2
    t_gpu = gpu.time(flops, m.weight_bytes)
    t_w = m.weight_bytes / GPU_LINK.effective
    t_kv = b * s * m.kv_bytes_per_token / write_bw if write_bw > 0 else 0.0
    return max(t_gpu, t_w, t_kv)


def step_flex_dram(m, gpu, b: int, s: int, n: int) -> StepTime:
    """FLEX(DRAM) (§6.1): KV in host DRAM, CPU attention, batch cut to fit DRAM."""
    cap = HOST_DRAM * (1 - DRAM_RESERVE)
    if not _weights_on_storage(m):
        cap -= m.weight_bytes
    per_seq = (s + n) * m.kv_bytes_per_token
    b_fit = int(min(b, max(0.0, cap) // per_seq))
    if b_fit <= 0:
        return StepTime("FLEX(DRAM)", 0, {}, {})
    ctx = s + n / 2
    kv = b_fit * ctx * m.kv_bytes_per_token
    parts = {"weights": m.weight_bytes / GPU_LINK.effective,
             "gpu": _gpu_step(m, gpu, b_fit),
             "cpu_attention": max(kv / CPU_ATTN_BW, kv / (DRAM_BW * DRAM_EFF))}
    if _weights_on_storage(m):
        parts["storage"] = m.weight_bytes / _raid_read(N_FLEX_SSD, dev.CONV_SSD, SSD_LINK)
    pre = _prefill(m, gpu, b_fit, s, DRAM_BW * DRAM_EFF)
    return StepTime("FLEX(DRAM)", b_fit, parts, {}, pre)


def _raid_read(k: int, ssd, link, shared_link=None) -> float:
    bw = k * min(ssd.p2p_bw, link.effective)
    return min(bw, shared_link.effective) if shared_link else bw


def step_flex_ssd(m, gpu, b: int, s: int, n: int, sixteen: bool = False) -> StepTime:
    """FLEX(SSD) on four PM9A3 (RAID-0), or FLEX(16 SSDs) on the SmartSSDs' SSDs behind the
    chassis x16 link.  Each step reads the whole KV cache into host DRAM and runs attention on
    the CPU; the read and the CPU attention serialize (the CPU drives the buffered file I/O,
    assumed).  New KV entries go through the page cache: written back in whole pages, off the
    critical path, one page per entry (sub-page granularity)."""
    name = "FLEX(16 SSDs)" if sixteen else "FLEX(SSD)"
    if sixteen:
        k, ssd = N_FLEX16, dev.SMARTSSD
        read_bw = _raid_read(k, ssd, SMART_HOST_LINK, CHASSIS_LINK)
    else:
        k, ssd = N_FLEX_SSD, dev.CONV_SSD
        read_bw = _raid_read(k, ssd, SSD_LINK)
    ctx = s + n / 2
    kv = b * ctx * m.kv_bytes_per_token
    w_sto = m.weight_bytes if _weights_on_storage(m) else 0.0
    if kv + w_sto + b * (s + n) * m.kv_bytes_per_token - kv > k * ssd.capacity:
        return StepTime(name, 0, {}, {})
    entries = b * m.layers * m.kv_heads * 2
    write = entries * PAGE / (k * ssd.write_bw)
    parts = {"weights": m.weight_bytes / GPU_LINK.effective,
             "gpu": _gpu_step(m, gpu, b),
             "kv_read+cpu_attention": (kv + w_sto) / read_bw
             + max(kv / CPU_ATTN_BW, 2 * kv / (DRAM_BW * DRAM_EFF)),
             "kv_write": write}
    pre = _prefill(m, gpu, b, s, k * ssd.write_bw)
    return StepTime(name, b, parts, {}, pre)


def hilos_alpha(m, n_dev: int, alpha: float = -1.0, xcache: bool = True) -> float:
    """The X-cache ratio HILOS uses: ``alpha`` if given, else §4.2's formula rounded to a
    power of two, with ``B_SSD = N x P2P`` and the fixed ``B_PCI``."""
    if not xcache:
        return 0.0
    if alpha >= 0.0:
        return alpha
    r = m.kv_bytes_per_token / m.x_bytes_per_token
    return round_pow2(alpha_opt(B_PCI, n_dev * dev.SMARTSSD.p2p_bw, r))


def step_hilos(m, gpu, b: int, s: int, n: int, n_dev: int, alpha: float = -1.0,
               c: int = 16, xcache: bool = True, writeback: bool = True) -> StepTime:
    """HILOS(N) (§4): attention near storage on ``n_dev`` SmartSSDs, X-cache fraction alpha
    (§4.2), delayed writeback with spill interval ``c`` (§4.3).

    Per step (all layers): the devices read their share of the KV cache (1 - alpha of the
    batch x KV heads) and, for alpha, the X-cache over P2P and flash (``T_SSD``); the X-cache goes
    to the GPU over the host path (``T_PCI``) and is projected to K, V (``T_GPU``); each
    device's kernel time comes from the ``hilos_attention`` cycle model.  With writeback,
    buffered tokens (on average ``(c - 1) / 2``) are scored on the host and their V rows sent
    to the devices every step; spills write whole pages in the background.  Without it every
    new entry is written synchronously (sub-page, on the critical path)."""
    sd = dev.SMARTSSD
    a = hilos_alpha(m, n_dev, alpha, xcache)
    ctx = s + n / 2
    kv_tok, x_tok = m.kv_bytes_per_token, m.x_bytes_per_token
    w_sto = m.weight_bytes if _weights_on_storage(m) else 0.0
    cap_need = b * (s + n) * ((1 - a) * kv_tok + a * x_tok) + w_sto
    if cap_need > n_dev * sd.capacity:
        return StepTime(f"HILOS({n_dev})", 0, {}, {})
    L, hkv, d = m.layers, m.kv_heads, m.head_dim
    # delayed writeback: k buffered tokens per KV head on average (0 .. c-1), §4.3
    k_buf = (c - 1) / 2 if writeback else 0.0
    stored = ctx - k_buf
    # flash reads per device (P2P for KV, host reads for the X-cache and stored weights)
    kv_read = (1 - a) * b * stored * kv_tok
    x_read = a * b * stored * x_tok
    flash_read = (kv_read + x_read + w_sto) / n_dev
    # new entries per step: K and V per KV head for the KV share, X for the X-cache share
    entries = b * L * hkv * (2 * (1 - a) + a * (x_tok / (L * hkv * d * 2)))
    entry_bytes = d * 2.0
    t_page = max(PAGE / sd.write_bw, PAGE_WRITE_OP_S)
    if writeback:
        # spills: whole pages in the background, sharing the flash with the reads
        t_write = writeback_cost(c, entries, entry_bytes) / PAGE * t_page / n_dev
        serial = {}
    else:
        # ANS: every new entry written synchronously by the host, one after another (§4.3)
        t_write = 0.0
        serial = {"sync_kv_write": entries * t_page}
    t_flash = flash_read / sd.p2p_bw + t_write
    # kernel: (1 - a) b hkv jobs over N devices (cycle model)
    g, passes = kernel_group(m.d_group)
    jobs = (1 - a) * b * hkv * passes / n_dev
    d_k = d if d in SUPPORTED_HEAD_DIMS else 128
    t_kernel = L * sd.kernel_time(g, d_k, jobs, max(1, int(round(stored))),
                                  int(round(k_buf)))
    # GPU: weights + K/V regeneration for the X-cache share (2 matrices of h x kv_dim)
    regen = a * b * ctx * L * 2 * m.hidden * (2 * hkv * d)
    parts = {"weights": (m.weight_bytes + x_read) / GPU_LINK.effective,
             "gpu": _gpu_step(m, gpu, b, regen),
             "ssd": t_flash,
             "kernel": t_kernel,
             "pci_xcache": x_read / B_PCI}
    # chassis link: stored weights, the X-cache, q / o / scores / buffered V
    q_o = b * L * m.heads * d * 2 * 2
    buf = b * L * (m.heads * k_buf * 4 + hkv * k_buf * d * 2) if writeback else 0.0
    parts["chassis"] = (w_sto + x_read + q_o + buf) / CHASSIS_LINK.effective
    if writeback:
        # §4.3 steps 2 and 4: the host reads the buffered K (scores them) and sends the scores,
        # Q and the buffered V with the query; the kernel needs them to start a job (serial)
        rows = b * L * hkv * k_buf
        serial["host_buffer"] = (L * HOST_CALL_S + rows * DMA_ROW_S
                                 + rows * entry_bytes / (DRAM_BW * DRAM_EFF)
                                 + buf / CHASSIS_LINK.effective)
    pre = _prefill(m, gpu, b, s, n_dev * sd.write_bw)
    return StepTime(f"HILOS({n_dev})", b, parts, serial, pre)


def _systems(m, gpu, b, s, n, cfg=None, devices=(4, 8, 16)) -> dict:
    """All systems of Figure 10 at one point; HILOS with the config's alpha, c and switches."""
    kw = {}
    if cfg is not None:
        kw = dict(alpha=cfg.alpha, c=cfg.spill_interval, xcache=cfg.xcache,
                  writeback=cfg.writeback)
    out = {"FLEX(DRAM)": step_flex_dram(m, gpu, b, s, n),
           "FLEX(SSD)": step_flex_ssd(m, gpu, b, s, n),
           "FLEX(16 SSDs)": step_flex_ssd(m, gpu, b, s, n, sixteen=True)}
    for k in devices:
        out[f"HILOS({k})"] = step_hilos(m, gpu, b, s, n, k, **kw)
    return out


def _tp(st: StepTime, n: int, pre: bool) -> float:
    return st.throughput(n, pre)


def _ratio(a: float, b: float) -> float:
    if a is None or b is None or math.isnan(a) or math.isnan(b) or b == 0:
        return math.nan
    return a / b


# --- run_model ----------------------------------------------------------------------------------
CONTEXTS = (8192, 16384, 32768, 65536, 131072)
ALPHAS = (0.0, 0.125, 0.25, 0.5, 0.75, 1.0)
SPILLS = (1, 2, 4, 8, 16, 32, 64, 128)
DEVICE_COUNTS = (4, 8, 16)


def run_model(cfg: HilosModelConfig, progress: bool = True) -> ModelResult:
    """Evaluate one configuration and the sweeps ``cfg.sweep`` asks for."""
    t0 = time.monotonic()
    m, gpu = wl.get_model(cfg.model), dev.GPUS[cfg.gpu]
    b, s, n, N = cfg.batch, cfg.context, cfg.output_len, cfg.smartssds
    pre = cfg.prefill
    devs = tuple(sorted({4, 8, 16, N}))
    want = {"context", "devices", "alpha", "spill"} if cfg.sweep == "all" else (
        set() if cfg.sweep == "none" else {cfg.sweep})
    total = 1 + len(CONTEXTS) * ("context" in want) + len(DEVICE_COUNTS) * ("devices" in want) \
        + len(ALPHAS) * ("alpha" in want) + len(SPILLS) * ("spill" in want)
    tables, plots, data = [], [], {}
    with Progress(total, "hilos", enabled=progress) as pg:
        point = _systems(m, gpu, b, s, n, cfg, devs)
        base = _tp(point["FLEX(SSD)"], n, pre)
        rows = []
        for name, st in point.items():
            tp = _tp(st, n, pre)
            rows.append([name, st.batch if not st.oom else "OOM", tp, _ratio(tp, base),
                         st.step, st.bound])
        a_used = hilos_alpha(m, N, cfg.alpha, cfg.xcache)
        tables.append(Table(f"Throughput at {m.name}, s={s:,}, b={b}, n={n} ({cfg.gpu})",
                            ["system", "batch", "tokens/s", "vs FLEX(SSD)", "step s", "bound"],
                            rows, note=f"HILOS alpha = {a_used:g} (config {cfg.alpha:g}), "
                            f"c = {cfg.spill_interval}, X-cache {cfg.xcache}, writeback "
                            f"{cfg.writeback}; prefill {'included' if pre else 'excluded'}."))
        hs = point[f"HILOS({N})"]
        tables.append(Table(f"HILOS({N}) step breakdown (s per decoding step)",
                            ["resource", "seconds", "kind"],
                            [[k, v, "overlapped"] for k, v in hs.parts.items()]
                            + [[k, v, "serial"] for k, v in hs.serial.items()]))
        data["point"] = {k: {"batch": v.batch, "throughput": (_tp(v, n, pre)),
                             "step_s": (v.step), "bound": v.bound,
                             "parts": v.parts, "serial": v.serial} for k, v in point.items()}
        data["alpha_used"] = a_used
        plots.append(Plot("hilos_point", f"{m.name} s={s}: throughput normalized to FLEX(SSD)",
                          "bar", "system", "x FLEX(SSD)",
                          {"speedup": [(_ratio(_tp(v, n, pre), base))
                                       for v in point.values()]}, groups=list(point)))
        pg.step("point")
        if "context" in want:
            ser = {k: [] for k in point}
            for ctx in CONTEXTS:
                sysd = _systems(m, gpu, b, ctx, n, cfg, devs)
                bs = _tp(sysd["FLEX(SSD)"], n, pre)
                for k in ser:
                    ser[k].append((_ratio(_tp(sysd[k], n, pre), bs)))
                pg.step(f"context {ctx}")
            tables.append(Table("Context sweep: throughput / FLEX(SSD)", ["context"] + list(ser),
                                [[c] + [math.nan if ser[k][i] is None else ser[k][i]
                                        for k in ser] for i, c in enumerate(CONTEXTS)]))
            plots.append(Plot("hilos_context", f"{m.name}: speedup over FLEX(SSD) vs context",
                              "bar", "context", "x FLEX(SSD)", ser,
                              groups=[f"{c // 1024}K" for c in CONTEXTS]))
            data["context_sweep"] = {"contexts": list(CONTEXTS), "speedup": ser}
        if "devices" in want:
            tps = []
            for k in DEVICE_COUNTS:
                tps.append(_tp(step_hilos(m, gpu, b, s, n, k, cfg.alpha, cfg.spill_interval,
                                          cfg.xcache, cfg.writeback), n, pre))
                pg.step(f"N={k}")
            tables.append(Table("SmartSSD-count sweep", ["N", "alpha", "tokens/s",
                                                         "vs FLEX(SSD)"],
                                [[k, hilos_alpha(m, k, cfg.alpha, cfg.xcache), t,
                                  _ratio(t, base)] for k, t in zip(DEVICE_COUNTS, tps)]))
            plots.append(Plot("hilos_devices", f"{m.name} s={s}: HILOS(N) over FLEX(SSD)", "line",
                              "SmartSSDs", "x FLEX(SSD)",
                              {"HILOS": [(_ratio(t, base)) for t in tps]},
                              x=list(DEVICE_COUNTS)))
            data["device_sweep"] = {"devices": list(DEVICE_COUNTS),
                                    "throughput": [(t) for t in tps]}
        if "alpha" in want:
            tps = []
            for a in ALPHAS:
                tps.append(_tp(step_hilos(m, gpu, b, s, n, N, a, cfg.spill_interval, True,
                                          cfg.writeback), n, pre))
                pg.step(f"alpha {a}")
            tps_a = np.array(tps, float)
            best = ALPHAS[int(np.nanargmax(tps_a))] if np.isfinite(tps_a).any() else None
            tables.append(Table(f"Alpha sweep (N={N})", ["alpha", "tokens/s", "vs best"],
                                [[a, t, _ratio(t, np.nanmax(tps_a))]
                                 for a, t in zip(ALPHAS, tps)],
                                note=f"formula alpha = {hilos_alpha(m, N):g}; sweep best = "
                                f"{best}"))
            plots.append(Plot("hilos_alpha", f"{m.name} s={s}: throughput vs alpha", "line",
                              "alpha", "tokens/s", {"HILOS": [(t) for t in tps]},
                              x=list(ALPHAS)))
            data["alpha_sweep"] = {"alpha": list(ALPHAS), "throughput": [(t) for t in tps],
                                   "best": best, "formula": hilos_alpha(m, N)}
        if "spill" in want:
            tps = []
            for c in SPILLS:
                tps.append(_tp(step_hilos(m, gpu, b, s, n, N, cfg.alpha, c, cfg.xcache, True),
                               n, pre))
                pg.step(f"c {c}")
            tps_c = np.array(tps, float)
            best = SPILLS[int(np.nanargmax(tps_c))] if np.isfinite(tps_c).any() else None
            tables.append(Table(f"Spill-interval sweep (N={N})", ["c", "tokens/s", "vs best"],
                                [[c, t, _ratio(t, np.nanmax(tps_c))]
                                 for c, t in zip(SPILLS, tps)], note=f"best c = {best}"))
            plots.append(Plot("hilos_spill", f"{m.name} s={s}: throughput vs spill interval c",
                              "line", "c", "tokens/s", {"HILOS": [(t) for t in tps]},
                              x=list(SPILLS)))
            data["spill_sweep"] = {"c": list(SPILLS), "throughput": [(t) for t in tps],
                                   "best": best}
    res = ModelResult("hilos", f"HILOS system model: {m.name}, s={s:,}, N={N}",
                      config_to_dict(cfg), tables, plots, data,
                      assumptions=assumptions())
    res.seconds = time.monotonic() - t0
    return res


# --- reproduce ----------------------------------------------------------------------------------
FIG10_MODELS = ("OPT-30B", "OPT-66B", "OPT-175B")
FIG12_MODELS = ("Qwen2.5-32B", "Mixtral-8x7B", "GLaM-143B")


def _peak_gflops(d_group: int, n: int = 32768, head_dim: int = 128) -> float:
    """Table 3: kernel GFLOPS from the cycle model (4 d FLOPs per token per query head)."""
    sd = dev.SMARTSSD
    jobs = 64
    t = sd.kernel_time(d_group, head_dim, jobs, n)
    return jobs * d_group * 4 * head_dim * n / t / 1e9


def _range_rows(label: str, paper: tuple, values, source: str, note: str) -> list:
    """Two rows, the least and the greatest of ``values``, against the paper's range."""
    return [Row(f"{label} {end}", p, float(f(values)), source=source, note=note)
            for end, p, f in (("min", paper[0], np.nanmin), ("max", paper[1], np.nanmax))]


def reproduce(progress: bool = True, seed: int = 0) -> ModelResult:
    """The paper's headline figures (Figures 10, 12-15, Table 3, §6.4) against the model."""
    t0 = time.monotonic()
    gpu = dev.GPUS[HilosModelConfig().gpu]
    b, n = 16, 64
    grid = [(mn, s) for mn in FIG10_MODELS for s in CONTEXTS]
    abl = [(mn, s) for mn in FIG10_MODELS + ("GLaM-143B",) for s in CONTEXTS]
    outs = (16, 32, 64, 128, 256)
    total = len(grid) + len(abl) + len(FIG12_MODELS) * len(CONTEXTS) + 2 + len(outs) * 4
    fig10 = {}
    tables, plots, rows = [], [], []
    with Progress(total, "hilos reproduce", enabled=progress) as pg:
        for mn, s in grid:
            m = wl.get_model(mn)
            fig10[(mn, s)] = {k: _tp(v, n, False) for k, v in _systems(m, gpu, b, s, n).items()}
            pg.step(f"{mn} {s}")
        # Figure 15 ablation at N = 8
        ab = {}
        for mn, s in abl:
            m = wl.get_model(mn)
            f = _tp(step_flex_ssd(m, gpu, b, s, n), n, False)
            ab[(mn, s)] = {
                "ANS": _tp(step_hilos(m, gpu, b, s, n, 8, xcache=False, writeback=False), n,
                           False) / f,
                "ANS+WB": _tp(step_hilos(m, gpu, b, s, n, 8, xcache=False), n, False) / f,
                "ANS+X": _tp(step_hilos(m, gpu, b, s, n, 8, writeback=False), n, False) / f,
                "HILOS": _tp(step_hilos(m, gpu, b, s, n, 8), n, False) / f}
            pg.step(f"ablation {mn} {s}")
        # Figure 12b: GQA / MoE over the best baseline
        f12 = {}
        for mn in FIG12_MODELS:
            m = wl.get_model(mn)
            for s in CONTEXTS:
                sy = _systems(m, gpu, b, s, n, devices=(8,))
                best = np.nanmax([_tp(sy[k], n, False) for k in ("FLEX(DRAM)", "FLEX(SSD)")])
                f12[(mn, s)] = _tp(sy["HILOS(8)"], n, False) / best
                pg.step(f"{mn} {s}")
        # Figure 13 sweeps (OPT-175B and OPT-66B, 32K context, N = 8)
        f13 = {}
        for mn in ("OPT-66B", "OPT-175B"):
            m = wl.get_model(mn)
            s = 32768
            f13[mn] = {
                "alpha": [_tp(step_hilos(m, gpu, b, s, n, 8, a), n, False) for a in ALPHAS],
                "c": {a: [_tp(step_hilos(m, gpu, b, s, n, 8, a, c), n, False) for c in SPILLS]
                      for a in (0.25, 0.5)}}
            pg.step(f"fig13 {mn}")
        # Figure 14: output length with prefill (HILOS(8) over FLEX(SSD))
        f14 = {}
        for mn in ("OPT-66B", "OPT-175B"):
            m = wl.get_model(mn)
            for s in (16384, 65536):
                for no in outs:
                    f14[(mn, s, no)] = (_tp(step_hilos(m, gpu, b, s, no, 8), no, True)
                                        / _tp(step_flex_ssd(m, gpu, b, s, no), no, True))
                    pg.step(f"fig14 {mn} {s} {no}")

    def sp(key, sysname, base="FLEX(SSD)"):
        return _ratio(fig10[key][sysname], fig10[key][base])

    hil = [sp(k, f"HILOS({N})") for k in grid for N in DEVICE_COUNTS]
    best_cell = max(((k, N) for k in grid for N in DEVICE_COUNTS),
                    key=lambda kn: np.nan_to_num(sp(kn[0], f"HILOS({kn[1]})"), nan=-1))
    rows.append(Row("Fig 10: max HILOS speedup over FLEX(SSD)", 7.86, float(np.nanmax(hil)),
                    source="HILOS §6.3", note=f"at {best_cell[0][0]} s={best_cell[0][1]:,} "
                    f"HILOS({best_cell[1]}); KV-read bound: N x 3.0 GB/s P2P plus the "
                    "X-cache path vs FLEX(SSD) whose RAID read and CPU attention (12 GB/s, "
                    "assumed) serialize"))
    oom = [k for k in grid if math.isnan(fig10[k]["FLEX(DRAM)"])]
    lc = [sp(k, "HILOS(16)") for k in oom]
    if lc:
        rows.append(Row("Fig 10: long context (FLEX(DRAM) OOM), HILOS(16)/FLEX(SSD) min", 5.3,
                        float(np.nanmin(lc)), source="HILOS §6.3",
                        note=f"{len(oom)} OOM points: " + ", ".join(
                            f"{k[0]} {k[1] // 1024}K" for k in oom)))
        rows.append(Row("Fig 10: long context (FLEX(DRAM) OOM), HILOS(16)/FLEX(SSD) max", 7.8,
                        float(np.nanmax(lc)), source="HILOS §6.3",
                        note="same points; HILOS(16) taken as the paper's range reaches the "
                             "7.86x maximum"))
    else:
        rows.append(Row("Fig 10: long context (FLEX(DRAM) OOM), HILOS(16)/FLEX(SSD) min", 5.3,
                        None, source="HILOS §6.3", note="FLEX(DRAM) never OOMs in the grid"))
    fits = [k for k in grid if not math.isnan(fig10[k]["FLEX(DRAM)"])]
    for N, lo, hi in ((4, 1.10, 1.36), (16, 1.88, 2.49)):
        r = [sp(k, f"HILOS({N})", "FLEX(DRAM)") for k in fits]
        note = ("over the points where FLEX(DRAM) runs (reduced batch); both are KV-bound at "
                "long context: HILOS(N) reads at N x 3.0 GB/s (+ X-cache) vs CPU attention at "
                "12 GB/s (assumed, set from this comparison), so the ratio grows ~linearly in N "
                "where the paper's grows ~1.8x from 4 to 16 devices")
        rows += _range_rows(f"Fig 10: HILOS({N}) / FLEX(DRAM)", (lo, hi), r, "HILOS §6.3", note)
    r16 = [sp(k, "FLEX(16 SSDs)") for k in grid]
    note16 = ("both reads end at ~25 GB/s (4 x PCIe 4.0 x4 vs the chassis x16 link); the model "
              "has no PCIe-switch / U.2-adapter overhead (the paper gives none), so the gap "
              "comes only from the weights and write paths")
    rows += _range_rows("Fig 10: FLEX(16 SSDs) / FLEX(SSD)", (0.64, 0.94), r16, "HILOS §6.3",
                        note16)
    # Figure 15
    ans = [v["ANS"] for v in ab.values()]
    wb = [v["ANS+WB"] / v["ANS"] for v in ab.values()]
    xg = [v["ANS+X"] / v["ANS"] for v in ab.values()]
    rows.append(Row("Fig 15: ANS over FLEX(SSD), max", 3.39, float(np.nanmax(ans)),
                    source="HILOS §6.5", note="N = 8, OPT-30B/66B/175B and GLaM-143B, 8K-128K; "
                    "ANS reads 8 x 3.0 GB/s vs FLEX(SSD)'s serialized read + CPU attention"))
    rows.append(Row("Fig 15: ANS+WB over ANS, max", 1.32, float(np.nanmax(wb)),
                    source="HILOS §6.5", note=f"sync sub-page writes at {PAGE_WRITE_OP_S * 1e6:g} "
                    "us each, host-issued one by one (assumed); the paper gives no write "
                    "latency"))
    rows.append(Row("Fig 15: ANS+X over ANS, max", 1.64, float(np.nanmax(xg)),
                    source="HILOS §6.5", note="alpha = 0.5 at N = 8: flash reads 0.75x of "
                    "the KV cache and the X-cache path B_PCI = 8 GB/s balanced (§4.2)"))
    # Figure 13 / §6.4
    m175 = wl.get_model("OPT-175B")
    a_form = hilos_alpha(m175, 8)
    rows.append(Row("§6.4: alpha from the formula at N = 8", 0.5, a_form, unit="",
                    source="HILOS §4.2, §6.4", note="B_SSD = 8 x 3.0 GB/s, B_PCI = 8 GB/s "
                    "(set from the paper's ratio ~3); 2 x 8 / (24 + 8) = 0.5"))
    a_best = [ALPHAS[int(np.nanargmax(v["alpha"]))] for v in f13.values()]
    rows.append(Row("Fig 13: best alpha of the sweep (OPT-66B, OPT-175B, 32K)", 0.5,
                    float(np.mean(a_best)), unit="", source="HILOS §6.4",
                    note="argmax per model: " + ", ".join(f"{k} {a}" for k, a in
                                                           zip(f13, a_best))))
    c_cases = [np.array(v, float) / np.nanmax(v) for f in f13.values() for v in f["c"].values()]
    c_each = [SPILLS[int(np.nanargmax(v))] for v in c_cases]
    c_best = SPILLS[int(np.nanargmax(np.exp(np.mean(np.log(c_cases), axis=0))))]
    rows.append(Row("Fig 13: best spill interval c", 16, float(c_best), unit="",
                    source="HILOS §4.3, §6.4", note="argmax of the geometric mean over OPT-66B/"
                    "175B x alpha 0.25/0.5 (each: " + ", ".join(str(c) for c in c_each) + "); "
                    "c < 16 rewrites partial 4 KiB pages (14 us per page op, assumed), c > 16 "
                    "sends more buffered V rows per step (50 ns each, assumed); the optimum is "
                    "where the two slopes meet, not fixed"))
    drop = [1 - v[SPILLS.index(64)] / v[SPILLS.index(16)] for f in f13.values()
            for v in f["c"].values()]
    rows.append(Row("Fig 13 / §7: throughput loss from c = 16 to c = 64", 0.30,
                    float(np.max(drop)), unit="", source="HILOS §7",
                    note="paper: over 30%; ours is the host's buffered-token work (K read, V and "
                    "scores over the chassis link), which is bytes per buffered row and small "
                    "against the step's KV reads; the paper's explicit-DMA software overhead "
                    "is not quantified"))
    # Table 3
    for g, paper in ((1, 11.9), (4, 46.8), (5, 56.3)):
        rows.append(Row(f"Table 3: peak kernel GFLOPS, d_group = {g}", paper, _peak_gflops(g),
                        unit="GFLOPS", source="HILOS Table 3",
                        note=("calibration, not a reproduction: the FPGA DRAM efficiency is "
                              "set from this figure; " if g == 1 else "prediction: ")
                        + "the larger of the cycle model at 296 MHz (one 512-bit K and V beat "
                        "per cycle, 32K tokens) and the K/V stream from the FPGA's DDR4-2400 "
                        "at 62% of 19.2 GB/s; the DRAM bounds all three"))
    # Figure 12b and 14
    v12 = list(f12.values())
    note12 = ("HILOS(8) over the better of FLEX(DRAM) / FLEX(SSD), Qwen2.5-32B, Mixtral-8x7B, "
              "GLaM-143B, 8K-128K; GQA models run alpha = 0 (their X-cache is larger than the "
              "KV cache); no GPU-memory limit modeled")
    rows += _range_rows("Fig 12b: GQA/MoE speedup", (1.16, 3.36), v12, "HILOS §6.4", note12)
    rows.append(Row("Fig 14: max speedup over output lengths (prefill included)", 6.08,
                    float(np.nanmax(list(f14.values()))), source="HILOS §6.4",
                    note="HILOS(8) / FLEX(SSD), OPT-66B/175B, s = 16K/64K, n = 16..256; "
                    "prefill on the GPU roofline plus the KV write at the tier's write "
                    "bandwidth (FlashAttention internals not modeled)"))
    rows.append(Row("Eq. 3: traffic ratio at s = 32K", traffic_ratio(32768), traffic_ratio(32768),
                    unit="", source="HILOS §4.1", note="(4sh + 4h) / (8h) = (s + 1) / 2"))
    # tables and plots
    cols = list(SYSTEMS)
    tables.append(Table("Figure 10: throughput normalized to FLEX(SSD) (b = 16, n = 64)",
                        ["model", "context"] + cols,
                        [[mn, s] + [sp((mn, s), k) for k in cols] for mn, s in grid],
                        note="OOM = FLEX(DRAM) cannot fit one sequence's KV cache in DRAM."))
    plots.append(Plot("hilos_fig10", "Figure 10: throughput / FLEX(SSD)", "bar",
                      "model, context", "x FLEX(SSD)",
                      {k: [(sp(key, k)) for key in grid] for k in cols},
                      groups=[f"{mn.split('-')[1]} {s // 1024}K" for mn, s in grid]))
    tables.append(Table("Figure 15: ablation at N = 8 (throughput / FLEX(SSD))",
                        ["model", "context", "ANS", "ANS+WB", "ANS+X", "HILOS"],
                        [[mn, s] + [ab[(mn, s)][k] for k in ("ANS", "ANS+WB", "ANS+X", "HILOS")]
                         for mn, s in abl]))
    plots.append(Plot("hilos_fig15", "Figure 15: ablation (N = 8)", "bar", "model, context",
                      "x FLEX(SSD)", {k: [ab[key][k] for key in abl]
                                      for k in ("ANS", "ANS+WB", "ANS+X", "HILOS")},
                      groups=[f"{mn.split('-')[1]} {s // 1024}K" for mn, s in abl]))
    tables.append(Table("Figure 13: spill interval c at alpha 0.25 / 0.5 (tokens/s, 32K, N = 8)",
                        ["model", "alpha"] + [f"c={c}" for c in SPILLS],
                        [[mn, a] + v for mn, f in f13.items() for a, v in f["c"].items()]))
    plots.append(Plot("hilos_fig13_alpha", "Figure 13: throughput vs alpha (32K, N = 8)", "line",
                      "alpha", "tokens/s", {mn: f["alpha"] for mn, f in f13.items()},
                      x=list(ALPHAS)))
    plots.append(Plot("hilos_fig13_c", "Figure 13: throughput vs spill interval (alpha 0.5)",
                      "line", "c", "tokens/s", {mn: f["c"][0.5] for mn, f in f13.items()},
                      x=list(SPILLS)))
    tables.append(Table("Figure 12b: HILOS(8) over the best baseline", ["model", "context",
                                                                         "speedup"],
                        [[mn, s, v] for (mn, s), v in f12.items()]))
    tables.append(Table("Figure 14: HILOS(8) / FLEX(SSD) with prefill by output length",
                        ["model", "context"] + [f"n={o}" for o in outs],
                        [[mn, s] + [f14[(mn, s, o)] for o in outs]
                         for mn in ("OPT-66B", "OPT-175B") for s in (16384, 65536)]))
    data = {"fig10": {f"{mn}|{s}": fig10[(mn, s)] for mn, s in grid},
            "fig15": {f"{mn}|{s}": ab[(mn, s)] for mn, s in abl},
            "fig12b": {f"{mn}|{s}": v for (mn, s), v in f12.items()},
            "fig13": {mn: {"alpha": f["alpha"], "c": {str(a): v for a, v in f["c"].items()}}
                      for mn, f in f13.items()},
            "fig14": {f"{mn}|{s}|{o}": v for (mn, s, o), v in f14.items()},
            "table3_gflops": {g: _peak_gflops(g) for g in (1, 4, 5)}}
    res = ModelResult("hilos", "HILOS (ASPLOS'26) reproduction: system model", {},
                      tables, plots, data, rows=rows, assumptions=assumptions())
    res.seconds = time.monotonic() - t0
    return res


def assumptions() -> list:
    """(parameter, value, why) for everything the paper does not give, plus the shared ones."""
    own = [
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
    shared = [a for a in dev.assumptions() if a[0] in (
        "GPU achievable fraction", "link efficiency", "SmartSSD P2P read", "SmartSSD write",
        "SmartSSD FPGA DRAM efficiency")]
    return own + shared + list(wl.assumptions())
