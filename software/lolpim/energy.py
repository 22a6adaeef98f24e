"""Energy per output token of the LoL-PIM systems and their GPU baselines (§8.1), from the
actions one decode cycle performs, priced by the shared energy table
(:mod:`pimforge.software.energy`).  The paper gives no energy figure, so these are reported by
``pimforge model lolpim`` only.

* AiM systems: every token's GEMVs read the weights (the LM head too) and its request's K and V
  inside the banks (``dram:aim:bit``), one bf16 MAC per weight and per cached value read (a
  query head reads its KV head's K and V itself, as the per-head GEMVs of
  :mod:`~pimforge.software.lolpim.pim` do); the chips' background power over the cycle.
* GPUs: the weights once per micro-batch, each request's K and V once per KV head, from HBM or
  GDDR6; the tensor-core FLOPs; the GPUs' static power over the cycle.
* Both: the two TP all-reduces per layer (a ring: ``2 (tp - 1)`` shares of the activations per
  all-reduce) and the ``pp - 1`` pipeline hand-offs, over the HUB and the node links, priced as
  PCIe (the AiMX cards and the GPUs hang off PCIe).
"""
from __future__ import annotations

from pimforge.base.formats import parse_format
from pimforge.hw.core.activity import op_action
from pimforge.software.energy import EnergyResult
from pimforge.software.lolpim.config import NODE
from pimforge.software.lolpim.pim import BYTES

__all__ = ["step_counts", "energy_result", "run_energy", "ENERGY_NODE", "MAC"]

# AiM's PUs sit on the DRAM die; its periphery logic is priced as 45 nm logic (the table's
# reference node: a DRAM process's transistors are no better than an older logic node's)
ENERGY_NODE = "45nm"
MAC = op_action("fma", parse_format("e8m7"))      # Table 5: bf16 MACs
BITS = 8 * BYTES


def _weights(m) -> float:
    return m.layers * (m.attn_params + m.ffn_matrix_params) + m.vocab * m.hidden


def _links(m, r) -> float:
    """Bits over the HUB and node links per token: TP all-reduces and PP hand-offs."""
    act = m.hidden * BYTES * 8
    return m.layers * 2 * 2 * (r.tp - 1) * act + (r.pp - 1) * act


def step_counts(system: str, m, r, nodes: int) -> dict:
    """Actions per output token of ``r`` (a
    :class:`~pimforge.software.lolpim.pipeline.StepResult` of ``system`` on ``nodes`` nodes)."""
    ctx = r.context
    per_token_s = r.cycle_s / r.batch
    link = {"link:pcie:bit": _links(m, r)}
    if system in ("GPU-HBM", "GPU-GDDR"):
        tier = "dram:hbm:bit" if system == "GPU-HBM" else "dram:gddr6:bit"
        weight_bits = r.micro_batches * _weights(m) * BITS / r.batch
        kv_bits = m.layers * 2 * m.kv_heads * m.head_dim * ctx * BITS
        flops = 2.0 * _weights(m) + 4.0 * m.layers * m.heads * m.head_dim * ctx
        return {tier: weight_bits + kv_bits, "gpu:flop:e5m10": flops,
                "static:gpu": nodes * per_token_s, **link}
    kv = m.layers * 2 * m.heads * m.head_dim * ctx
    chips = nodes * NODE.modules * NODE.chips
    return {"dram:aim:bit": (_weights(m) + kv) * BITS, MAC: _weights(m) + kv,
            "static:aim_chip": chips * per_token_s, **link}


def energy_result(system: str, m, r, nodes: int, label: str = "") -> EnergyResult:
    return EnergyResult(label or system, step_counts(system, m, r, nodes), r.cycle_s / r.batch,
                        ENERGY_NODE)


def run_energy(m, results: dict, seconds: float) -> dict:
    """``run llm``'s energy of LoL-PIM on one AiMX module: the system model's actions of one
    token at the run's context (``results["LoL-PIM(123)"]``: the bits AiM reads in-bank and its
    MACs do not depend on the time), the module's chips' static power over the run's
    ``seconds`` per token; and the other systems of ``results`` (name -> step result) as
    baselines."""
    counts = dict(step_counts("LoL-PIM(123)", m, results["LoL-PIM(123)"], 1),
                  **{"static:aim_chip": NODE.chips * seconds})
    own = EnergyResult("LoL-PIM", counts, seconds, ENERGY_NODE)
    return {"j_per_token": own.j_per_token, "power_w": own.power_w,
            "breakdown_j": own.breakdown(),
            "baselines": {k: energy_result(k, m, r, 1).j_per_token for k, r in results.items()
                          if k != "LoL-PIM(123)"},
            "source": "the LoL-PIM system model's actions at this context "
                      "(software/lolpim/energy.py), one AiMX module's chips' static power over "
                      "this run's time per token"}
