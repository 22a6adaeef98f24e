"""``pimforge model papi``: the PAPI system (§6-§7.1: 6 A100s, 30 FC-PIM and 60 Attn-PIM HBM3
stacks), its baselines, the Dolly tasks, the config and its presets."""
from __future__ import annotations

from dataclasses import dataclass

from pimforge.base.config import UnitConfig, param
from pimforge.base.errors import ConfigError
from pimforge.software import devices as dev
from pimforge.software.devices import GB

__all__ = ["PapiModelConfig", "PRESETS", "MODELS", "TASKS", "SYSTEMS", "TaskStats", "HBM",
           "Hbm", "ENERGY_NODE", "GPU", "GPUS", "FC_STACKS", "ATTN_STACKS", "NVLINK",
           "PCIE", "POWER_BUDGET_W", "FPU_AREA_PAPER", "FPU_AREA_OURS", "FPU_AREA_OURS_ASAP7_UM2",
           "FPU_DRAM_PENALTY", "SYSTEM_SETUP", "SCHED_MODES"]

GPUS = 6                    # §7.1: six A100s hold GPT-3 175B (350 GB) in 60 GB each
FC_STACKS = 30              # §7.1: 30 HBM devices for the FC weights (5 per GPU)
ATTN_STACKS = 60            # §7.1: 60 for attention (the KV cache)
POWER_BUDGET_W = 116.0      # §6.1 footnote 2: an 8-high 16 GB HBM3 cube (IDD7), from [23]
FPU_AREA_PAPER = 0.1025     # §6.1: A_FPU in mm^2, from AttAcc [23]
# Our FPU: `pimforge synth papi_pu --preset fpu --target generic` (one 16-lane fp16 FPU of
# AttAcc's shape with its column and input buffers) is 5,092 um^2 at ASAP7 at op_depth 4, the
# depth whose netlist meets the 666 MHz FPU clock (op_depth 2 is smaller but reaches only about
# 431 MHz); x 10 for the DRAM process of the HBM die it sits on (PAM 7.5, as the synth compare
# rows of PAM's HBM-PIM PUs).
# AttAcc's own public reference RTL is 9,106 um^2 at ASAP7 (synth compare), and 0.1025 / 9,106 um^2
# = 11.3x: the paper's figure is an ASAP7 synthesis in a DRAM process too.
# tests/test_synth_smoke.py re-synthesizes it and holds this number to the netlist.
FPU_AREA_OURS_ASAP7_UM2 = 5092.0
FPU_DRAM_PENALTY = 10.0
FPU_AREA_OURS = FPU_AREA_OURS_ASAP7_UM2 * FPU_DRAM_PENALTY / 1e6
GPU = dev.GPUS["A100-PAPI"]
NVLINK = dev.LINKS["NVLink3"]     # §6.3: GPU <-> FC-PIM
PCIE = dev.LINKS["PCIe5x16"]      # §6.3: Attn-PIM over PCIe / CXL; one x16 link per 10 stacks


@dataclass(frozen=True)
class Hbm:
    """One 8-high HBM3 stack (§6.1, §7.1); a standard die has ``banks_std`` banks of
    ``bank_bytes``; PIM dies trade banks for FPUs by eq. 3."""

    dies: int = 8                     # §6.1: 8-high stack
    banks_std: int = 128              # 16 GB / 8 dies / 16 MB banks (assumed bank size)
    bank_bytes: float = 16 * 2 ** 20  # 96 banks x 8 dies x 16 MiB = 12 GiB: §7.1's FC-PIM
    bank_area: float = 0.83           # §6.1: A_bank (CACTI-3DD, 22 nm), mm^2
    die_area: float = 121.0           # §6.1: A_Max of one HBM die [61], mm^2
    pins: int = 1024                  # HBM3 interface width
    pin_gbps: float = 5.2             # §7.1: 5.2 Gb/s per pin
    fpu_hz: float = 666e6             # §6.2: FPU clock (the papi_pu cycle model's clock)

    @property
    def io_bw(self) -> float:
        """External bandwidth of one stack: 665.6 GB/s."""
        return self.pins * self.pin_gbps * 1e9 / 8


HBM = Hbm()


# The energies of the PIM power model (Fig. 7), the GPUs, the links and the stacks' background
# power are entries of the shared energy table (hw/core/energy_table.yaml: pim:mac:e5m10,
# pim:xfer:e5m10, dram:hbm_pim:bit, dram:hbm:bit, gpu:flop:e5m10, link:nvlink:bit,
# link:pcie:bit, static:gpu, static:hbm_stack), each with its source; hardware.py counts the
# actions and the table prices them at the HBM die's 22 nm (ENERGY_NODE).
ENERGY_NODE = "22nm"


@dataclass(frozen=True)
class TaskStats:
    """Request lengths of one Dolly category (tokens): lognormal with this mean and std,
    clipped to [lo, hi]."""

    name: str
    in_mean: float
    in_std: float
    out_mean: float
    out_std: float
    lo: int = 8
    hi: int = 2048


# Assumed (no network, the paper gives no lengths): databricks-dolly-15k's creative-writing
# responses (stories, poems, essays) run several paragraphs, general-qa answers one or two; the
# instruction of either is a sentence or two and neither category carries a context passage.
TASKS = {t.name: t for t in (
    TaskStats("creative-writing", 40, 30, 380, 300),
    TaskStats("general-qa", 30, 20, 190, 170),
)}

MODELS = ("LLaMA-65B", "GPT-3-66B", "GPT-3-175B")
SYSTEMS = ("A100+AttAcc", "A100+HBM-PIM", "AttAcc-only", "PIM-only PAPI", "PAPI")
SCHED_MODES = ("dynamic", "gpu", "pim")
# where each system runs FC ("gpu", "pim" or the §5 scheduler's "dynamic") and on which PIM
# configuration: (FPUs, banks) of one processing group, banks per die
SYSTEM_SETUP = {
    "A100+AttAcc": dict(fc="gpu", fc_pu=(1, 1), attn_pu=(1, 1)),
    "A100+HBM-PIM": dict(fc="gpu", fc_pu=(1, 2), attn_pu=(1, 2)),
    "AttAcc-only": dict(fc="pim", fc_pu=(1, 1), attn_pu=(1, 1)),
    "PIM-only PAPI": dict(fc="pim", fc_pu=(4, 1), attn_pu=(1, 2)),
    "PAPI": dict(fc="dynamic", fc_pu=(4, 1), attn_pu=(1, 2)),
}


@dataclass(frozen=True)
class PapiModelConfig(UnitConfig):
    """One PAPI system-model configuration (§7 defaults: LLaMA-65B, creative-writing)."""

    UNIT = "model papi"
    model: str = param("LLaMA-65B", "LLM (§7.1), fp16", choices=MODELS)
    task: str = param("creative-writing", "Dolly category (§7.1)", choices=tuple(TASKS))
    batch: int = param(16, "initial RLP: requests of the static batch", lo=1, hi=512)
    spec: int = param(2, "speculation length (TLP)", lo=1, hi=16)
    scheduler: str = param("dynamic", "FC placement of PAPI: dynamic (§5), gpu or pim",
                           choices=SCHED_MODES)
    alpha: float = param(0.0, "memory-boundedness threshold on RLP x TLP (0 = calibrated from "
                         "the GPU / FC-PIM crossover)", lo=0.0, hi=1e6)
    fpu_area_mm2: float = param(FPU_AREA_OURS, "area of one FPU (eqs. 3-4); default ours "
                                "(papi_pu preset fpu, ASAP7 x 10 for the DRAM process); the "
                                "paper's is 0.1025", lo=0.001, hi=5.0)
    fc_fpus: int = param(4, "FPUs per bank of FC-PIM (xP1B)", choices=(1, 2, 4, 8))
    power_cap: bool = param(True, "cap PIM activity by the 116 W stack budget")
    batches: int = param(2, "seeded static batches averaged", lo=1, hi=20)
    sweep: str = param("all", "sweeps around the point", choices=("all", "none", "batch",
                                                                  "spec"))
    seed: int = param(0, "seed of the request traces", lo=0, hi=2 ** 31 - 1)

    def validate(self):
        per_die = HBM.die_area / (self.fc_fpus * self.fpu_area_mm2 + HBM.bank_area)
        if per_die < 1:
            raise ConfigError(self.UNIT, "fpu_area_mm2", self.fpu_area_mm2,
                              f"an area that leaves one bank per die with {self.fc_fpus} "
                              f"FPUs per bank (< {(HBM.die_area - HBM.bank_area) / self.fc_fpus:.3g})")
        if self.batch * self.spec > 4096:
            raise ConfigError(self.UNIT, "batch", self.batch, f"batch x spec <= 4096 "
                              f"(spec {self.spec})")


PRESETS = {
    "default": {},
    "gpt3_175b": {"model": "GPT-3-175B"},
    "general_qa": {"task": "general-qa"},
    "high_parallelism": {"batch": 64, "spec": 4},
    "small": {"batch": 4, "spec": 1, "batches": 1, "sweep": "none"},
}
