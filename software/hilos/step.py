"""One decoding step (all layers) of each HILOS system (§2.2, §4.1-4.3, §6.1).

FlexGen-style offloading overlaps the resources across layers, so a step takes as long as its
busiest resource (``max``), plus whatever the design puts on the critical path (HILOS without
delayed writeback: synchronous sub-page KV writes).

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
``prefill`` is set (Figure 14, output-length sweep).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

from pimforge.software import devices as dev
from pimforge.software.hilos.config import (
    B_PCI, CHASSIS_LINK, CPU_ATTN_BW, DEVICE_COUNTS, DMA_ROW_S, DRAM_BW, DRAM_EFF, DRAM_RESERVE,
    GPU_LINK, HOST_CALL_S, HOST_DIMMS, HOST_DRAM, N_FLEX16, N_FLEX_SSD, PAGE, PAGE_WRITE_OP_S, SMART_HOST_LINK,
    SSD_LINK, SUPPORTED_HEAD_DIMS, WEIGHTS_ON_STORAGE
)
from pimforge.software.hilos.formulas import alpha_opt, kernel_group, round_pow2, writeback_cost

__all__ = ["StepTime", "step_flex_dram", "step_flex_ssd", "hilos_alpha", "step_hilos",
           "all_systems", "tput", "ratio"]


@dataclass
class StepTime:
    """One decoding step (all layers) of one system; ``parts`` are the overlapped resource
    times (s), ``serial`` what adds on top; ``batch`` the batch it ran (0 = OOM).

    For the energy (:mod:`pimforge.software.hilos.energy`): ``actions`` are the step's action
    counts (energy-table keys), ``devices`` the powered devices by static key (their static
    power runs the whole step), ``active`` seconds of extra power (the CPU computing
    attention), ``kernel`` the SmartSSDs' attention jobs."""

    system: str
    batch: int
    parts: dict
    serial: dict
    prefill: float = 0.0
    actions: dict = field(default_factory=dict)
    devices: dict = field(default_factory=dict)
    active: dict = field(default_factory=dict)
    kernel: dict = field(default_factory=dict)

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


def tput(st: StepTime, n: int, pre: bool) -> float:
    """Tokens/s of a step result over ``n`` output tokens (NaN for OOM)."""
    return st.throughput(n, pre)


def ratio(a: float, b: float) -> float:
    """``a / b``, NaN when either is missing or NaN or ``b`` is 0."""
    if a is None or b is None or math.isnan(a) or math.isnan(b) or b == 0:
        return math.nan
    return a / b


# --- the baselines ------------------------------------------------------------------------------
def _weights_on_storage(m) -> bool:
    return m.params > WEIGHTS_ON_STORAGE


def _gpu_step(m, gpu, b: int, extra_flops: float = 0.0) -> float:
    """GPU work of a step: the weight GEMMs for ``b`` tokens (weights read once from HBM)."""
    return gpu.time(b * m.decode_flops() + extra_flops, m.weight_bytes)


def _host_actions(m, b: int, extra_flops: float = 0.0, gpu_in: float = 0.0) -> dict:
    """The GPU's and the weights' actions of a step: the GEMM FLOPs, the weights (and
    ``gpu_in`` other bytes) over the GPU's PCIe link, written into HBM and read back, and,
    unless they stay in storage, read from host DRAM."""
    w = m.weight_bytes
    acts = {"gpu:flop:e5m10": b * m.decode_flops() + extra_flops,
            "dram:hbm:bit": 8.0 * 2 * (w + gpu_in), "link:pcie:bit": 8.0 * (w + gpu_in)}
    if not _weights_on_storage(m):
        acts["dram:ddr4:bit"] = 8.0 * w
    return acts


def _host_devices(extra: dict | None = None) -> dict:
    """The host's powered devices (Table 1: one GPU, one CPU, 16 DIMMs) and ``extra``."""
    return {"static:gpu": 1, "static:cpu": 1, "static:ddr4_dimm": HOST_DIMMS, **(extra or {})}


def _q_o_bytes(m, b: int) -> float:
    """Q out and O back for every query head of a step (fp16)."""
    return b * m.layers * m.heads * m.head_dim * 2 * 2


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
    acts = _host_actions(m, b_fit)
    # the CPU reads the KV cache from DRAM and appends the new entries; Q and O cross PCIe
    acts["dram:ddr4:bit"] = acts.get("dram:ddr4:bit", 0.0) + 8.0 * (
        kv + b_fit * m.kv_bytes_per_token)
    acts["link:pcie:bit"] += 8.0 * _q_o_bytes(m, b_fit)
    ssds = {"static:ssd": N_FLEX_SSD} if _weights_on_storage(m) else {}
    return StepTime("FLEX(DRAM)", b_fit, parts, {}, pre, acts, _host_devices(ssds),
                    {"static:cpu_active": parts["cpu_attention"]})


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
    acts = _host_actions(m, b)
    # the KV cache (and stored weights) over the SSD links into host DRAM, read back by the
    # CPU (or the GPU's DMA); the new entries' pages out; Q and O between GPU and CPU.  The
    # SSDs' own energy is their datasheet power over the step (HILOS §6.3), not per byte.
    acts["link:pcie:bit"] += 8.0 * (kv + w_sto + entries * PAGE + _q_o_bytes(m, b))
    acts["dram:ddr4:bit"] = acts.get("dram:ddr4:bit", 0.0) + 8.0 * 2 * (kv + w_sto)
    cpu = max(kv / CPU_ATTN_BW, 2 * kv / (DRAM_BW * DRAM_EFF))
    return StepTime(name, b, parts, {}, pre, acts, _host_devices({"static:ssd": k}),
                    {"static:cpu_active": cpu})


# --- HILOS(N) -----------------------------------------------------------------------------------
def hilos_alpha(m, n_dev: int, alpha: float = -1.0, xcache: bool = True) -> float:
    """The X-cache ratio HILOS uses: ``alpha`` if given, else §4.2's formula rounded to a
    power of two, with ``B_SSD = N x P2P`` and the fixed ``B_PCI``."""
    if not xcache:
        return 0.0
    if alpha >= 0.0:
        return alpha
    r = m.kv_bytes_per_token / m.x_bytes_per_token
    return round_pow2(alpha_opt(B_PCI, n_dev * dev.SMARTSSD.p2p_bw, r))


def _flash_time(m, b: int, n_dev: int, a: float, c: int, stored: float, x_read: float,
                w_sto: float, writeback: bool) -> tuple:
    """(each device's flash time, serial writes): its share of the KV, X-cache and weight
    reads (P2P), plus the new entries' writes, spilled in whole pages in the background with
    delayed writeback, or else written synchronously by the host one after another (ANS)."""
    sd = dev.SMARTSSD
    L, hkv, d = m.layers, m.kv_heads, m.head_dim
    kv_read = (1 - a) * b * stored * m.kv_bytes_per_token
    flash_read = (kv_read + x_read + w_sto) / n_dev
    # new entries per step: K and V per KV head for the KV share, X for the X-cache share
    entries = b * L * hkv * (2 * (1 - a) + a * (m.x_bytes_per_token / (L * hkv * d * 2)))
    t_page = max(PAGE / sd.write_bw, PAGE_WRITE_OP_S)
    if writeback:
        # spills: whole pages in the background, sharing the flash with the reads
        t_write = writeback_cost(c, entries, _entry_bytes(m)) / PAGE * t_page / n_dev
        serial = {}
    else:
        # ANS: every new entry written synchronously by the host, one after another (§4.3)
        t_write = 0.0
        serial = {"sync_kv_write": entries * t_page}
    return flash_read / sd.p2p_bw + t_write, serial


def _entry_bytes(m) -> float:
    """One KV entry of one head (K or V row, fp16)."""
    return m.head_dim * 2.0


def _kernel_time(m, b: int, n_dev: int, a: float, stored: float, k_buf: float) -> float:
    """Each device's ``hilos_attention`` time (cycle model) for its (1 - a) b hkv jobs."""
    g, passes = kernel_group(m.d_group)
    jobs = (1 - a) * b * m.kv_heads * passes / n_dev
    d_k = m.head_dim if m.head_dim in SUPPORTED_HEAD_DIMS else 128
    return m.layers * dev.SMARTSSD.kernel_time(g, d_k, jobs, max(1, int(round(stored))),
                                               int(round(k_buf)))


def _buffered_bytes(m, b: int, k_buf: float) -> float:
    """Host-to-device bytes of the buffered tokens per step: their scores and V rows."""
    return b * m.layers * (m.heads * k_buf * 4 + m.kv_heads * k_buf * m.head_dim * 2)


def _host_buffer_time(m, b: int, k_buf: float, buf: float) -> float:
    """§4.3 steps 2 and 4: the host reads the buffered K (scores them) and sends the scores,
    Q and the buffered V with the query; the kernel needs them to start a job (serial)."""
    rows = b * m.layers * m.kv_heads * k_buf
    return (m.layers * HOST_CALL_S + rows * DMA_ROW_S
            + rows * _entry_bytes(m) / (DRAM_BW * DRAM_EFF)
            + buf / CHASSIS_LINK.effective)


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
    w_sto = m.weight_bytes if _weights_on_storage(m) else 0.0
    cap_need = b * (s + n) * ((1 - a) * m.kv_bytes_per_token + a * m.x_bytes_per_token) + w_sto
    if cap_need > n_dev * sd.capacity:
        return StepTime(f"HILOS({n_dev})", 0, {}, {})
    L, hkv, d = m.layers, m.kv_heads, m.head_dim
    # delayed writeback: k buffered tokens per KV head on average (0 .. c-1), §4.3
    k_buf = (c - 1) / 2 if writeback else 0.0
    stored = ctx - k_buf
    x_read = a * b * stored * m.x_bytes_per_token      # host reads of the X-cache
    t_flash, serial = _flash_time(m, b, n_dev, a, c, stored, x_read, w_sto, writeback)
    # GPU: weights + K/V regeneration for the X-cache share (2 matrices of h x kv_dim)
    regen = a * b * ctx * L * 2 * m.hidden * (2 * hkv * d)
    parts = {"weights": (m.weight_bytes + x_read) / GPU_LINK.effective,
             "gpu": _gpu_step(m, gpu, b, regen),
             "ssd": t_flash,
             "kernel": _kernel_time(m, b, n_dev, a, stored, k_buf),
             "pci_xcache": x_read / B_PCI}
    # chassis link: stored weights, the X-cache, q / o / scores / buffered V
    q_o = b * L * m.heads * d * 2 * 2
    buf = _buffered_bytes(m, b, k_buf) if writeback else 0.0
    parts["chassis"] = (w_sto + x_read + q_o + buf) / CHASSIS_LINK.effective
    if writeback:
        serial["host_buffer"] = _host_buffer_time(m, b, k_buf, buf)
    pre = _prefill(m, gpu, b, s, n_dev * sd.write_bw)
    g, passes = kernel_group(m.d_group)
    jobs = (1 - a) * b * hkv * passes * L
    n_k, n_pre = max(1, int(round(stored))), int(round(k_buf))
    kv_read = (1 - a) * b * stored * m.kv_bytes_per_token
    acts = _host_actions(m, b, regen, x_read)
    # the X-cache over the chassis link (the GPU link is in _host_actions); Q, O, scores and
    # buffered V rows; the host reads the buffered K rows it scores.  In each SmartSSD the KV
    # rows land in the FPGA's DRAM (P2P) and the kernel streams K and V from it.
    acts["link:pcie:bit"] += 8.0 * (w_sto + x_read + q_o + buf)
    host_rows = b * L * hkv * k_buf * _entry_bytes(m) if writeback else 0.0
    acts["dram:ddr4:bit"] = acts.get("dram:ddr4:bit", 0.0) + 8.0 * host_rows
    acts["dram:fpga_ddr4:bit"] = 8.0 * (kv_read + jobs * (2 * n_k + n_pre) * m.head_dim * 2)
    active = {"static:cpu_active": serial.get("host_buffer", 0.0)}
    kernel = {"d_group": g, "head_dim": m.head_dim if m.head_dim in SUPPORTED_HEAD_DIMS else 128,
              "jobs": jobs, "n_stored": n_k, "n_precomputed": n_pre, "devices": n_dev,
              "seconds": parts["kernel"]}
    return StepTime(f"HILOS({n_dev})", b, parts, serial, pre, acts,
                    _host_devices({"static:ssd": n_dev}), active, kernel)


def all_systems(m, gpu, b, s, n, cfg=None, devices=DEVICE_COUNTS) -> dict:
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
