"""Devices of the system model: GPUs (roofline), interconnects, PIM memory tiers and SmartSSDs.

Sources are written next to every figure: ``PAM`` Table 1 and §7.1, ``HILOS`` §6.1-6.4 and
Table 1, vendor datasheets for GPUs and links.  Figures the papers do not give are marked
``assumed`` and listed by :func:`assumptions`.

A PIM tier's attention rate is the least of three limits, in query-head tokens per second
(one token of K and V against one query head: ``4 d`` FLOPs):

* its PUs, timed by the ``pam_pu`` cycle model (:mod:`pimforge.software.calibration`) at the
  tier's clock;
* its internal (bank or flash) bandwidth over the ``4 d`` bytes of K and V a token holds;
* its power cap, the per-device compute capacity of PAM §7.1 (1.6 TFLOPS HBM, 204 GFLOPS DDR,
  18 GFLOPS SSD), which bounds how many PUs may run at once.
"""
from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from pimforge.hw.hilos.config import KERNEL_CLOCK_MHZ
from pimforge.hw.pam.config import PU_TIER_PRESETS, TIER_CLOCK_MHZ
from pimforge.software import calibration as cal

__all__ = ["GPU", "GPUS", "HostCPU", "CPUS", "Link", "LINKS", "PimTier", "PAM_TIERS", "SmartSSD", "SMARTSSD",
           "CONV_SSD", "assumptions", "GB", "TB"]

GB = 1e9
TB = 1e12
GiB = 2 ** 30


@dataclass(frozen=True)
class GPU:
    """Roofline GPU: ``time = max(flops / (peak * eff_compute), bytes / (bw * eff_memory))``."""

    name: str
    peak_flops: float       # dense fp16/bf16 tensor FLOP/s
    mem_bw: float           # bytes/s
    mem_bytes: float
    source: str
    eff_compute: float = 0.7    # assumed achievable fraction of peak (GEMM at decode shapes)
    eff_memory: float = 0.85    # assumed achievable fraction of HBM bandwidth

    def time(self, flops: float, bytes_: float) -> float:
        return max(flops / (self.peak_flops * self.eff_compute),
                   bytes_ / (self.mem_bw * self.eff_memory))


GPUS = {g.name: g for g in (
    GPU("H100", 989.4e12, 3.35 * TB, 80 * GB, "NVIDIA H100 SXM5 datasheet: 989 TFLOPS dense "
        "bf16, 3.35 TB/s HBM3, 80 GB; PAM §7.1 (8x H100-80GB), HILOS Table 1"),
    GPU("A100", 312e12, 1.555 * TB, 40 * GB, "NVIDIA A100 40GB datasheet: 312 TFLOPS dense "
        "fp16, 1,555 GB/s; HILOS Table 1 (A100 40GB)"),
    GPU("A100-PAPI", 312e12, 1.935 * TB, 80 * GB, "PAPI §3.1: A100 with 312 TFLOPS and "
        "1,935 GB/s (the A100 80GB PCIe datasheet); 80 GB (§7.1)"),
    GPU("RTX4090", 165.2e12, 1.008 * TB, 24 * GB, "NVIDIA RTX 4090 (Ada) whitepaper: 165 TFLOPS "
        "dense fp16 with fp32 accumulate, 1,008 GB/s, 24 GB"),
)}


@dataclass(frozen=True)
class Link:
    """A point-to-point link: bandwidth per direction in bytes/s."""

    name: str
    bandwidth: float
    source: str
    efficiency: float = 0.8     # assumed protocol and DMA efficiency

    @property
    def effective(self) -> float:
        return self.bandwidth * self.efficiency


LINKS = {lk.name: lk for lk in (
    Link("PCIe4x16", 31.5 * GB, "PCIe 4.0: 16 GT/s x16, 128b/130b: 31.5 GB/s per direction; "
         "HILOS §6.1 (GPU and chassis links)"),
    Link("PCIe4x4", 7.88 * GB, "PCIe 4.0 x4: 7.88 GB/s per direction; HILOS §6.1 (each "
         "PM9A3 SSD)"),
    Link("PCIe3x4", 3.94 * GB, "PCIe 3.0 x4: 3.94 GB/s per direction; HILOS §7.1 (each "
         "SmartSSD's internal lanes)"),
    Link("PCIe5x16", 63.0 * GB, "PCIe 5.0 x16: 63 GB/s per direction (H100 host link, DGX-H100)"),
    Link("NVLink4", 450 * GB, "NVLink 4 (H100): 900 GB/s both directions, 450 GB/s each",
         efficiency=0.9),
    Link("NVLink3", 300 * GB, "NVLink 3 (A100): 12 links x 25 GB/s = 300 GB/s each "
         "direction; PAPI §6.3 (GPU <-> FC-PIM)", efficiency=0.9),
    Link("DIMM-link", 25 * GB, "Hermes §IV-A and Table II: 8 lanes x 25 Gb/s = 25 GB/s per "
         "DIMM-to-DIMM link (DIMM-Link, HPCA'23)"),
    Link("PCIe4-Hermes", 64 * GB, "Hermes §V-A: 'PCIe 4.0 ... with a bandwidth of 64 GB/s' "
         "between the NDP-DIMMs and the GPU (the x16 duplex total; taken as given, since the "
         "paper's prefill share of §V-D fits only this figure)"),
)}


@dataclass(frozen=True)
class HostCPU:
    """A host CPU that computes from its own DRAM (Hermes-host, PowerInfer's CPU side): a
    roofline of its DRAM bandwidth and its vector FLOP rate."""

    name: str
    mem_bw: float           # bytes/s
    peak_flops: float       # fp32 FLOP/s (fp16 weights converted on the fly)
    source: str
    eff_memory: float = 0.7     # assumed achievable fraction of DRAM bandwidth (GEMV)
    eff_compute: float = 0.5    # assumed achievable fraction of peak (AVX2 GEMV with fp16->fp32)

    def time(self, flops: float, bytes_: float) -> float:
        return max(flops / (self.peak_flops * self.eff_compute),
                   bytes_ / (self.mem_bw * self.eff_memory))


CPUS = {c.name: c for c in (
    HostCPU("i9-13900K", 89.6 * GB, 1.4e12, "Hermes §III-A, §V-A (PowerInfer's host): 89.6 GB/s "
            "(DDR5-5600 x 2 channels); peak assumed: 8 P-cores x 2 AVX2 FMA x 8 fp32 x 2 x "
            "5.4 GHz = 1.4 TFLOPS (the E-cores left out)"),
)}


@dataclass(frozen=True)
class PimTier:
    """One PIM-enabled memory tier of PAM: ``devices`` devices of ``capacity`` bytes each.

    Members
    -------
    pus, lanes, clock_mhz, tile : PUs per device, PU vector width, PU clock and tile size (the
        ``pam_pu`` config the cycle model runs).
    rus, ru_width : RUs per device and their vector width (``pam_ru``).
    internal_bw : bytes/s per device that PUs can read (all banks or all flash channels).
    flops_cap : FLOP/s per device allowed by its power budget (PAM §7.1).
    host_bw : bytes/s per device between the tier and the host or GPU (for baselines that move
        KV, and for migrations and partial results).
    """

    name: str
    devices: int
    capacity: float
    pus: int
    lanes: int
    clock_mhz: float
    rus: int
    ru_width: int
    internal_bw: float
    flops_cap: float
    host_bw: float
    source: str
    tile: int = 16

    @property
    def total_capacity(self) -> float:
        return self.devices * self.capacity

    @property
    def pu_peak_flops(self) -> float:
        """FLOP/s of one PU at one beat per cycle: 4 d FLOPs per 2 d / lanes beats."""
        return 2.0 * self.lanes * self.clock_mhz * 1e6

    @property
    def active_pus(self) -> float:
        """PUs that may run at once under the power cap (fractional: a duty cycle)."""
        return min(float(self.pus), self.flops_cap / self.pu_peak_flops)

    def pu_time(self, head_dim: int, sets: float, tokens_per_set: float) -> float:
        """Seconds for ``sets`` token sets of ``tokens_per_set`` tokens each (one query head
        each), spread evenly over the active PUs of all devices (``pam_pu`` cycle model)."""
        if sets <= 0:
            return 0.0
        n = max(1, round(tokens_per_set))
        cyc = cal.pu_set_cycles(self.lanes, head_dim, n, self.tile)
        per_pu = sets / (self.active_pus * self.devices)
        fill = cal.pu_fill_cycles(self.lanes, head_dim, n, self.tile) if per_pu > 0 else 0
        return (per_pu * cyc + fill) / (self.clock_mhz * 1e6)

    def token_rate(self, head_dim: int) -> float:
        """Query-head tokens per second of the whole tier on long streams: the least of its
        PUs (16-token sets back to back, cycle model) and its internal bandwidth."""
        return _token_rate(self, head_dim)

    def bw_time(self, head_dim: int, token_reads: float) -> float:
        """Seconds to read ``token_reads`` tokens' K and V (fp16) inside the devices."""
        return token_reads * 4 * head_dim / (self.internal_bw * self.devices)

    def ru_time(self, head_dim: int, merges: float, partials: int, final: bool = False) -> float:
        """Seconds for ``merges`` reductions of ``partials`` partials each, spread over the
        tier's RUs (``pam_ru`` cycle model; ``final``: the RU also normalizes, PAM Alg. 1
        line 21)."""
        if merges <= 0:
            return 0.0
        cyc = cal.ru_merge_cycles(self.ru_width, head_dim, partials, final)
        return merges / (self.rus * self.devices) * cyc / (self.clock_mhz * 1e6)


@lru_cache(maxsize=64)
def _token_rate(tier: PimTier, head_dim: int) -> float:
    sets, n = 1e6, tier.tile
    return sets * n / max(tier.pu_time(head_dim, sets, n), tier.bw_time(head_dim, sets * n))


# PAM Table 1 and §7.1-7.5.  HBM3 5.2 Gbps, 16 GB per stack, 40 stacks (5 per H100), 16
# channels of 64 PIM banks; a 16 GB stack is 8 dies of 64 PUs (§7.5: 64 PUs per die) and 16 RUs
# per die; bank reads 32 B per tCCD_L = 4 tCK at 1.3 GHz -> 1,024 banks x 10.4 GB/s.
# DDR4-3200, 32 GB per DIMM, 40 DIMMs; 2 ranks x 8 chips, 8 PUs and 2 RUs per chip (§7.5);
# 128 PIM banks per channel reading 8 B per tCCD_L = 8 tCK at 1.6 GHz -> 204.8 GB/s.
# SSD: 8 SSDs of 8 channels (Table 1: 64 channels), 4 dies per channel, 16 KB pages, tR = 30 us
# -> 8 x 4 x 16 KB / 30 us = 17.5 GB/s per SSD; 64 PUs and 8 RUs per controller (§5.2).
# The PUs' vector width (lanes) and clock are the pam_pu tier preset's (hw/pam/config.py:
# PU_TIER_PRESETS, TIER_CLOCK_MHZ); the rest is stated here.
PAM_TIERS = {t.name: t for t in (
    PimTier("hbm", 40, 16 * GB, pus=512, lanes=PU_TIER_PRESETS["hbm"]["lanes"],
            clock_mhz=TIER_CLOCK_MHZ["hbm"],
            rus=128 + 16 * 8, ru_width=16, internal_bw=1024 * 32 * 1.3e9 / 4, flops_cap=1.6e12,
            host_bw=665.6 * GB, source="PAM Table 1, §5.2, §7.1, §7.5"),
    PimTier("ddr", 40, 32 * GB, pus=128, lanes=PU_TIER_PRESETS["ddr"]["lanes"],
            clock_mhz=TIER_CLOCK_MHZ["ddr"],
            rus=2 * 8 * 2 + 4, ru_width=16, internal_bw=128 * 8 * 1.6e9 / 8, flops_cap=204e9,
            host_bw=25.6 * GB, source="PAM Table 1, §5.2, §7.1, §7.5"),
    PimTier("ssd", 8, 2048 * GB, pus=64, lanes=PU_TIER_PRESETS["ssd"]["lanes"],
            clock_mhz=TIER_CLOCK_MHZ["ssd"],
            rus=8, ru_width=16, internal_bw=8 * 4 * 16384 / 30e-6, flops_cap=18e9,
            host_bw=7.88 * GB,
            source="PAM Table 1 (64 channels of 256 GB = 16 TB; §7.1 says 8 TB: we take 8 SSDs "
                   "of 8 channels x 4 dies, 2 TB each), §5.2, §7.1"),
)}


@dataclass(frozen=True)
class SmartSSD:
    """A near-storage processing device (HILOS §2.3, §5.3, §6.1).

    Members
    -------
    p2p_bw : flash-to-FPGA-DRAM read bandwidth over the internal PCIe switch (bytes/s).
    write_bw : flash write bandwidth (bytes/s).
    host_link : the device's share of the host interconnect.
    clock_mhz : accelerator clock (``hilos_attention`` runs its cycle model at it).
    dram_bytes : FPGA-attached DRAM.
    dram_bw, dram_eff : that DRAM's peak bandwidth and the share the kernel achieves; the
        kernel streams every K and V row from it (HILOS §5.4), so its time is the larger of
        the cycle model's and the DRAM's.
    """

    name: str
    capacity: float
    p2p_bw: float
    write_bw: float
    clock_mhz: float
    dram_bytes: float
    source: str
    dram_bw: float = 0.0
    dram_eff: float = 1.0

    def kernel_time(self, d_group: int, head_dim: int, jobs: float, n_stored: int,
                    n_precomputed: int = 0) -> float:
        """Seconds for ``jobs`` attention jobs (one KV head with its ``d_group`` queries each)
        back to back on this device's ``hilos_attention`` kernel (its cycle model)."""
        if jobs <= 0:
            return 0.0
        cyc = cal.hilos_job_cycles(d_group, head_dim, n_stored, n_precomputed)
        fill = cal.hilos_fill_cycles(d_group, head_dim, n_stored, n_precomputed)
        compute = (jobs * cyc + fill) / (self.clock_mhz * 1e6)
        if not self.dram_bw:
            return compute
        # K rows of the stored tokens and V rows of all tokens, fp16, from the FPGA's DRAM
        dram = jobs * (n_stored + n_stored + n_precomputed) * head_dim * 2 / (
            self.dram_bw * self.dram_eff)
        return max(compute, dram)


SMARTSSD = SmartSSD("SmartSSD", 3.84 * TB, p2p_bw=3.0 * GB, write_bw=2.0 * GB,
                    clock_mhz=KERNEL_CLOCK_MHZ,
                    dram_bytes=4 * GiB, dram_bw=19.2 * GB, dram_eff=11.9 / 19.2,
                    source="HILOS §6.1 (3.84 TB, KU15P, 4 GB DDR4-2400: 64 bits x 2400 MT/s = "
                           "19.2 GB/s), §6.2 (296 MHz), §6.4 (P2P read below the kernels' 3.0 "
                           "GB/s: assumed 3.0 GB/s), write bandwidth assumed 2.0 GB/s; DRAM "
                           "efficiency 62% calibrated on Table 3's d_group=1 kernel (11.9 "
                           "GFLOPS at 1 FLOP per KV byte)")
CONV_SSD = SmartSSD("PM9A3", 3.84 * TB, p2p_bw=6.9 * GB, write_bw=4.1 * GB, clock_mhz=0.0,
                    dram_bytes=0, source="HILOS §6.1: PM9A3 6,900 MB/s read, 4,100 MB/s write")


def assumptions() -> list:
    """(parameter, value, why) for the device figures the papers do not give."""
    return [
        ("GPU achievable fraction", "70% of peak FLOPS, 85% of HBM bandwidth",
         "neither paper gives kernel efficiencies; typical of decode GEMMs"),
        ("link efficiency", "80% of the raw PCIe rate, 90% of NVLink",
         "protocol and DMA overheads are not given"),
        ("host CPU efficiency", "70% of DRAM bandwidth, 50% of peak FLOPS",
         "PowerInfer-style CPU GEMV; not given"),
        ("PAM HBM-PIM PUs", "512 per 16 GB stack (8 dies x 64)",
         "PAM §7.5 gives 64 PUs per die; the die count of a 16 GB HBM3 stack is assumed 8"),
        ("PAM DDR-PIM PUs", "128 per DIMM (2 ranks x 8 chips x 8)", "PAM §7.5: 8 PUs per chip"),
        ("PAM bank bandwidth", "32 B (HBM) / 8 B (DDR) per bank per tCCD_L",
         "derived from Table 1 timings; the PIM datapath width per bank is not given"),
        ("PAM SSD count", "8 SSDs x 8 channels x 2 TB",
         "Table 1 lists 64 channels of 256 GB (16 TB); §7.1 says 8 TB: no reproduce run "
         "fills either"),
        ("SmartSSD P2P read", "3.0 GB/s", "HILOS §6.4 says only that it is below 3.0 GB/s"),
        ("SmartSSD write", "2.0 GB/s", "not given"),
        ("SmartSSD FPGA DRAM efficiency", "62% of DDR4-2400's 19.2 GB/s",
         "calibrated: the share at which the d_group = 1 kernel gives HILOS Table 3's 11.9 "
         "GFLOPS; d_group 4 and 5 are predictions"),
    ]
