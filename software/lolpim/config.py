"""``pimforge model lolpim``: the LoL-PIM system (Tables 5 and 7, §8.1), its baselines, the
LongBench tasks (Table 2), the config and its presets."""
from __future__ import annotations

from dataclasses import dataclass

from pimforge.base.config import UnitConfig, param
from pimforge.base.errors import ConfigError
from pimforge.software import devices as dev
from pimforge.software import workloads as wl
from pimforge.software.devices import GB

__all__ = ["LolpimModelConfig", "PRESETS", "MODELS", "TASKS", "SYSTEMS", "PARTITIONS",
           "ALLOCATIONS", "CAPACITIES", "NODE", "GPU_HBM", "GPU_GDDR", "NODE_LINK", "TaskStats",
           "Node", "system_setup", "OUT_LEN", "HOST_SYNC_S", "LINK_LATENCY_S", "GPU_USABLE",
           "MAX_CONTEXT", "CHUNK_TOKENS", "HUB_BW"]


@dataclass(frozen=True)
class Node:
    """One PIM node (Table 7's 'PIM' column): ``modules`` AiMX modules (Table 5) of ``chips``
    AiM chips; each chip has 2 channels of 16 banks, one PU per bank."""

    modules: int = 8                 # Table 5: 8 modules
    chips: int = 8                   # 16 AiM channels per module / 2 channels per chip
    channels_per_chip: int = 2       # Table 5
    banks: int = 16                  # Table 5: 16 banks per channel, 1 PU per bank
    chip_bytes: float = 1 * GB       # §8.1: 1 GB AiM chips (8 Gb); 64 chips = Table 7's 64 GB
    pu_flops: float = 32e9           # Table 5: 32 GFLOPS per PU at 1 GHz (16 bf16 MACs/cycle)
    chip_io_bw: float = 64 * GB      # GDDR6 16 Gb/s x16 x 2 channels; 64 chips = 4,096 GB/s

    @property
    def channels_per_module(self) -> int:
        return self.chips * self.channels_per_chip

    @property
    def module_bytes(self) -> float:
        return self.chips * self.chip_bytes

    @property
    def bytes(self) -> float:
        return self.modules * self.module_bytes

    @property
    def pus(self) -> int:
        return self.modules * self.channels_per_module * self.banks

    @property
    def peak_flops(self) -> float:
        """65.5 TFLOPS (Table 7: 66T; internal bandwidth 65.5 TB/s)."""
        return self.pus * self.pu_flops

    @property
    def external_bw(self) -> float:
        return self.modules * self.chips * self.chip_io_bw


NODE = Node()
HUB_BW = 64 * GB          # Table 5: the HUB's interface bandwidth (module <-> module in a node)
NODE_LINK = dev.Link("AiMX-QSFP", 10 * GB, "§8.1: multi-node links modeled at 10 GB/s (AiMX "
                     "QSFP), matched across systems", efficiency=1.0)
LINK_LATENCY_S = 2e-6     # assumed: one message over a node link or the HUB
HOST_SYNC_S = 10e-6       # assumed: host <-> PIM synchronisation once per micro-batch round trip
GPU_USABLE = 0.9          # assumed: share of GPU memory for weights and KV (rest: workspace)
MAX_CONTEXT = 32768       # §1, Table 1: 32K tokens (Qwen1.5 CTL); static allocation reserves it
CHUNK_TOKENS = 256        # §5.1: row = T_cur / 256; one KV chunk = 256 tokens (one row per PU)

# Table 7.  GPU-HBM: A100-80GB as Table 7 lists it (3,352 GB/s); GPU-GDDR: 64 GB of GDDR6 at
# the PIM node's external 4,096 GB/s (§8.1: matched external bandwidth).
GPU_HBM = dev.GPU("A100-80GB", 312e12, 3352 * GB, 80 * GB, "LoL-PIM Table 7 (GPU-HBM)")
GPU_GDDR = dev.GPU("GPU-GDDR6", 312e12, 4096 * GB, 64 * GB, "LoL-PIM Table 7 (GPU-GDDR6)")


@dataclass(frozen=True)
class TaskStats:
    """Input context lengths of one LongBench task (Table 2, Qwen tokenizer)."""

    name: str
    mean: float
    std: float
    max: int
    min: int
    out_len: int      # LongBench's generation length for the task (dataset2maxlen)


# Table 2; output lengths: LongBench's config (qmsum 512, hotpotqa 32, musique 32 tokens)
TASKS = {t.name: t for t in (
    TaskStats("QMSum", 13966, 6182, 30456, 2651, 512),
    TaskStats("HotpotQA", 13465, 3921, 17674, 1917, 32),
    TaskStats("Musique", 16362, 1651, 17917, 6820, 32),
)}
OUT_LEN = {k: t.out_len for k, t in TASKS.items()}

MODELS = ("Qwen1.5-1.8B", "Qwen1.5-7B", "Qwen1.5-14B", "Qwen1.5-72B")
# the systems of §8: the three baselines and LoL-PIM's steps (1 = ITPP, 2 = + DPA and lazy
# allocation, 3 = + I/O-aware ping-pong buffering)
SYSTEMS = ("GPU-HBM", "GPU-GDDR", "PIM", "LoL-PIM(1)", "LoL-PIM(12)", "LoL-PIM(123)")
PARTITIONS = ("itpp", "hfa")
ALLOCATIONS = ("static", "dpa", "lazy")
CAPACITIES = (128, 256, 512, 1024)        # Figs. 9-10: system capacity in GB (2-16 nodes)


def system_setup(system: str) -> dict:
    """The partitioning, allocation and buffering of a PIM system of §8."""
    return {"PIM": dict(partition="hfa", alloc="static", pingpong=False, tp_only=True),
            "LoL-PIM(1)": dict(partition="itpp", alloc="static", pingpong=False),
            "LoL-PIM(12)": dict(partition="itpp", alloc="lazy", pingpong=False),
            "LoL-PIM(123)": dict(partition="itpp", alloc="lazy", pingpong=True)}[system]


@dataclass(frozen=True)
class LolpimModelConfig(UnitConfig):
    """One LoL-PIM system-model configuration (§8.1 defaults: Qwen1.5-7B on Musique)."""

    UNIT = "model lolpim"
    model: str = param("Qwen1.5-7B", "LLM (Table 1, Qwen1.5 series)", choices=MODELS)
    task: str = param("Musique", "LongBench task (Table 2)", choices=tuple(TASKS))
    nodes: int = param(4, "PIM nodes of 64 GB (8 modules each); GPUs get one GPU per node",
                       lo=1, hi=32)
    partition: str = param("itpp", "KV-cache partitioning (§4): itpp = intra-module "
                           "token-parallel, hfa = head-first allocation", choices=PARTITIONS)
    alloc: str = param("lazy", "KV allocation (§5): static = max context per request, dpa = "
                       "the request's own length, lazy = DPA + lazy chunk allocation",
                       choices=ALLOCATIONS)
    pingpong: bool = param(True, "I/O-aware ping-pong buffering (§6)")
    tp_only: bool = param(False, "TP over every module, PP = 1 (the prior PIM works' mapping, "
                          "§3.2; the PIM baseline)")
    tp: int = param(0, "tensor-parallel degree over modules (0 = the best; PP = modules / TP)",
                    lo=0, hi=256)
    micro_batches: int = param(0, "micro-batches in the pipeline (0 = the best)", lo=0, hi=1024)
    max_context: int = param(MAX_CONTEXT, "context length static allocation reserves (§5.1)",
                             lo=1024, hi=131072)
    chunk: int = param(CHUNK_TOKENS, "tokens per KV chunk of DPA / lazy allocation (§5.4)",
                       choices=(64, 128, 256, 512, 1024))
    batches: int = param(3, "sampled batches averaged per point", lo=1, hi=20)
    sweep: str = param("all", "sweeps around the point", choices=("all", "none", "tp_pp",
                                                                  "capacity"))
    seed: int = param(0, "seed of the sampled request lengths", lo=0, hi=2 ** 31 - 1)

    def validate(self):
        modules = self.nodes * NODE.modules
        m = wl.get_model(self.model)
        ok = [t for t in range(1, modules + 1) if modules % t == 0 and modules // t <= m.layers
              and (self.partition == "hfa" or m.kv_heads % t == 0)]
        if self.tp and self.tp not in ok:
            raise ConfigError(self.UNIT, "tp", self.tp, f"0 (the best) or, for {self.partition} "
                              f"on {modules} modules, {', '.join(map(str, ok)) or 'none'}")
        if self.tp and self.tp_only and self.tp != modules:
            raise ConfigError(self.UNIT, "tp", self.tp, f"0 or {modules} with tp_only")


PRESETS = {
    "default": {},
    "qwen7b_1024": {"nodes": 16},
    "qwen72b": {"model": "Qwen1.5-72B", "nodes": 16},
    "baseline_pim": {"partition": "hfa", "alloc": "static", "pingpong": False, "tp_only": True},
    "small": {"nodes": 2, "batches": 1, "sweep": "none"},
}
