"""``pimforge model pam``: the configuration, its presets, the hardware it describes and the
systems, models, datasets and batches of PAM's evaluation (§7.1, §7.2, §7.4)."""
from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

from pimforge.base.config import UnitConfig, param
from pimforge.software import devices as dv
from pimforge.software import workloads as wl
from pimforge.software.pam import locality as loc

__all__ = ["PamModelConfig", "PRESETS", "Hardware", "SYSTEMS", "ABLATIONS", "TIERS",
           "PAM_MODELS", "ONLINE", "OFFLINE", "SLOS", "OFFLINE_BATCHES", "ABLATION_BATCHES"]

SYSTEMS = ("vLLM-offloading", "AttAcc", "L-PIM", "LS-PIM", "PAM")
ABLATIONS = ("PAM", "w/o PAMattention", "w/o KV mapping", "w/o KV scheduling")
TIERS = tuple(dv.PAM_TIERS)             # hbm, ddr, ssd: fastest first
PAM_MODELS = ("Qwen2.5-32B", "LLaMA3-70B", "OPT-175B")
ONLINE = ("ShareGPT", "WildChat", "HumanEval")
OFFLINE = ("Arxiv_sum", "Write_doc")
SLOS = (100.0, 150.0, 200.0)
OFFLINE_BATCHES = {"LLaMA3-70B": (256, 512, 1024), "OPT-175B": (16, 32, 64)}   # PAM §7.2
# PAM Fig. 12 names "small" and "large" batches only.  Assumed: the small batch spills the KV
# cache past HBM into DDR, the large one into SSD as well (Arxiv_sum lengths).
ABLATION_BATCHES = {"Qwen2.5-32B": (1024, 4096), "LLaMA3-70B": (1024, 4096), "OPT-175B": (64, 256)}


@dataclass(frozen=True)
class PamModelConfig(UnitConfig):
    """``pimforge model pam``: one model, dataset and system configuration."""

    UNIT = "model pam"
    model: str = param("LLaMA3-70B", "LLM (PAM §7.1 evaluates Qwen2.5-32B, LLaMA3-70B, "
                       "OPT-175B)", choices=tuple(wl.MODELS))
    dataset: str = param("WildChat", "request lengths (online: ShareGPT, WildChat, HumanEval; "
                         "offline: Arxiv_sum, Write_doc)", choices=tuple(wl.DATASETS))
    batch: int = param(0, "batch size; 0 = the largest batch within the SLO and capacity", lo=0,
                       hi=1 << 20)
    slo_ms: float = param(150.0, "time per output token limit in ms (PAM §7.2: 100, 150, 200)",
                          lo=1.0, hi=1e6)
    gpus: int = param(8, "H100 GPUs (PAM §7.1: 8, tensor 4 x pipeline 2)", lo=1, hi=1024)
    hbm_stacks: int = param(40, "HBM3 16 GB stacks (PAM Table 1: 40)", lo=1, hi=4096)
    ddr_dimms: int = param(40, "DDR4 32 GB DIMMs (PAM Table 1: 40)", lo=0, hi=4096)
    ssds: int = param(8, "SSDs of 2 TB (PAM Table 1: 64 channels)", lo=0, hi=1024)
    keep: float = param(loc.LocalityParams.keep, "share of KV tokens sparse attention computes "
                        "(PAM §7.1: 8x compression)", lo=0.001, hi=1.0)
    drift: float = param(0.01, "share of tokens whose importance re-draws each step "
                         "(assumed; see reproduce)", lo=0.0, hi=1.0)
    lam: float = param(loc.LAMBDA, "lambda of the importance factor (PAM eq. 7)", lo=0.0,
                       hi=1.0)
    hbm_reserve: float = param(0.1, "share of HBM kept for activations and runtime (assumed)",
                               lo=0.0, hi=0.9)
    gpu_eff: float = param(0.7, "achieved share of the H100's peak FLOPS in the weight GEMMs "
                           "(assumed)", lo=0.01, hi=1.0)
    pcie_eff: float = param(0.8, "achieved share of the GPUs' PCIe 5.0 x16 host links for "
                            "offloaded KV (assumed)", lo=0.01, hi=1.0)
    seed: int = param(0, "seed of the request lengths and the attention traces", lo=0,
                      hi=2 ** 31 - 1)
    sweep: str = param("all", "what to sweep around the point: none, slo, batch or all",
                       choices=("none", "slo", "batch", "all"))


PRESETS = {
    "default": {},
    "online_opt175b": {"model": "OPT-175B", "dataset": "WildChat", "slo_ms": 100.0},
    "offline_llama70b": {"model": "LLaMA3-70B", "dataset": "Arxiv_sum", "batch": 1024},
    "small": {"model": "Qwen2.5-32B", "dataset": "ShareGPT", "batch": 64, "sweep": "none"},
}


@dataclass(frozen=True)
class Hardware:
    """The devices a config describes: the GPUs, the PIM tiers and the GPUs' host links."""

    gpu: dv.GPU
    gpus: int
    tiers: tuple            # PimTier for hbm, ddr, ssd
    host_link: dv.Link      # each GPU's link to host memory and the SSDs
    tp: int = 4             # PAM §7.1: 4-way tensor, 2-way pipeline parallelism

    @classmethod
    @lru_cache(maxsize=64)
    def from_config(cls, cfg: PamModelConfig) -> "Hardware":
        t = dv.PAM_TIERS
        return cls(replace(dv.GPUS["H100"], eff_compute=cfg.gpu_eff), cfg.gpus,
                   (replace(t["hbm"], devices=cfg.hbm_stacks),
                    replace(t["ddr"], devices=cfg.ddr_dimms),
                    replace(t["ssd"], devices=cfg.ssds)),
                   replace(dv.LINKS["PCIe5x16"], efficiency=cfg.pcie_eff))
