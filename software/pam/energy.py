"""Energy per output token of the PAM systems (PAM §7.3, Fig. 11): the actions one decoding
step performs, from the step model's own quantities, priced by the energy table.

Per step (all layers), divided by the batch (one output token per request):

* the GPUs' weight GEMMs: FLOPs, the weight bytes each pipeline stage reads from HBM once per
  micro-batch (through the HBM I/O), the tensor-parallel all-reduces over NVLink;
* vLLM-offloading: every KV byte read by the GPUs, from HBM through its I/O, from the DDR
  DIMMs or the SSDs over PCIe; the GPUs' attention FLOPs;
* the PIM systems: the K and V rows each tier's PUs read inside the device (HBM and DDR banks,
  flash pages), the PUs' and RUs' float operations and buffer accesses (the ``pam_pu`` and
  ``pam_ru`` activity models on the step's jobs), Q, partials or scores
  between the tiers and the host, and PAM's migrations (read on one tier, written on another);
* static power: every GPU, HBM stack, and the DDR DIMMs and SSDs of a tier that holds KV, for
  the step time.
"""
from __future__ import annotations

from pimforge.hw.core.energy import table
from pimforge.hw.pam.config import PU_TIER_PRESETS, PamPuConfig, PamRuConfig
from pimforge.hw.pam.pu_timing import pu_activity
from pimforge.hw.pam.ru_timing import ru_activity
from pimforge.software import workloads as wl
from pimforge.software.energy import EnergyResult, add_counts, scale_counts
from pimforge.software.pam.config import SYSTEMS, TIERS, Hardware, PamModelConfig
from pimforge.software.pam.step import request_lengths, step

__all__ = ["step_energy", "pu_actions", "ru_actions", "attention_joules",
           "figure11", "FIG11_CASES", "TIER_READ", "TIER_WRITE", "TIER_STATIC", "GPU_STATIC"]

# PAM §7.3: online batches 8192 (LLaMA3-70B) and 512 (OPT-175B) on WildChat, offline 1024 and
# 64 on Arxiv_sum
FIG11_CASES = {("LLaMA3-70B", "WildChat"): 8192, ("OPT-175B", "WildChat"): 512,
               ("LLaMA3-70B", "Arxiv_sum"): 1024, ("OPT-175B", "Arxiv_sum"): 64}

# what one byte costs where a tier's PUs read it (inside the device), and where a migration
# writes it; the SSD's PUs sit beside the flash channels (PAM §5.2), so no host interface
TIER_READ = {"hbm": ("dram:hbm_bank:bit", 8), "ddr": ("dram:ddr4_bank:bit", 8),
             "ssd": ("ssd:array_read:byte", 1)}
TIER_WRITE = {"hbm": ("dram:hbm_bank:bit", 8), "ddr": ("dram:ddr4_bank:bit", 8),
              "ssd": ("ssd:program:byte", 1)}
TIER_STATIC = {"hbm": "static:hbm_stack", "ddr": "static:ddr4_dimm", "ssd": "static:ssd_idle"}
GPU_STATIC = "static:h100"


def _pu_config(tier: str, head_dim: int) -> PamPuConfig:
    return PamPuConfig(lanes=PU_TIER_PRESETS[tier]["lanes"], head_dim=head_dim)


def pu_actions(tier: str, head_dim: int, token_reads: float, job_tokens: float) -> dict:
    """The tier's ``pam_pu`` actions for ``token_reads`` tokens in jobs of ``job_tokens``
    tokens each (one Q load per job): the unit's activity model on one job, times the jobs."""
    if token_reads <= 0:
        return {}
    k = max(1, round(job_tokens))
    return scale_counts(pu_activity(_pu_config(tier, head_dim), [k]), token_reads / k)


def ru_actions(head_dim: int, requests: float, partials: int, final: bool = False) -> dict:
    """``pam_ru`` actions for ``requests`` merges of ``partials`` partials each (the unit's
    activity model on one request, times the requests)."""
    if requests <= 0:
        return {}
    cfg = PamRuConfig(head_dim=head_dim, final=final)
    return scale_counts(ru_activity(cfg, [max(1, int(partials))]), requests)


def _gemm_counts(hw: Hardware, model: wl.ModelSpec, batch: int) -> dict:
    """The GPUs' weight GEMMs and all-reduces of one step (as :func:`~pimforge.software.pam.
    step.fc_time` times them)."""
    pp = max(1, hw.gpus // hw.tp)
    # each of the tp GPUs of a stage sends its ring share for the stage's layers
    allreduce = 2 * model.layers * batch * model.hidden * wl.BYTES_FP16 * 2 * (hw.tp - 1)
    return {"gpu:flop:e5m10": model.decode_flops() * batch,
            "dram:hbm:bit": 8.0 * model.weight_bytes * pp,
            "link:nvlink:bit": 8.0 * allreduce}


def _offload_counts(r: dict, model: wl.ModelSpec, batch: int, ctx: float) -> dict:
    """vLLM-offloading's attention: the whole KV cache into the GPUs each step."""
    kv, sh = r["kv_bytes"], r["shares"]
    return {"dram:hbm:bit": 8.0 * kv * sh[0],
            "dram:ddr4:bit": 8.0 * kv * sh[1],
            "ssd:read:byte": kv * sh[2],
            "link:pcie:bit": 8.0 * kv * (sh[1] + sh[2]),
            "gpu:flop:e5m10": batch * model.attention_flops(ctx)}


def _pim_counts(r: dict, model: wl.ModelSpec) -> dict:
    """The PIM tiers' attention: K and V reads inside each tier, PU and RU actions, the
    transfers to the host and PAM's migrations."""
    d = model.head_dim
    out: dict = {}
    for t, name in enumerate(TIERS):
        part = r["parts"][name]
        reads = part["token_reads"]
        key, per_byte = TIER_READ[name]
        out = add_counts(out, {key: reads * 4 * d * per_byte},
                         pu_actions(name, d, reads, part["job_tokens"]),
                         ru_actions(d, part["ru_requests"], part["ru_partials"]))
        if r["transfer_bytes"][t]:
            out = add_counts(out, {"link:pcie:bit": 8.0 * r["transfer_bytes"][t]})
    out = add_counts(out, ru_actions(d, r["final_requests"], r["final_partials"], final=True))
    for path, nbytes in r.get("migrated_bytes", {}).items():
        src, dst = path.split(">")
        (rk, rb), (wk, wb) = TIER_READ[src], TIER_WRITE[dst]
        out = add_counts(out, {rk: nbytes * rb, wk: nbytes * wb, "link:pcie:bit": 8.0 * nbytes})
    return out


def _static_counts(r: dict, hw: Hardware) -> dict:
    """Seconds of static power of every powered device during the step."""
    out = {GPU_STATIC: hw.gpus * r["time"], TIER_STATIC["hbm"]: hw.tiers[0].devices * r["time"]}
    for t in (1, 2):
        if r["shares"][t] > 0:
            out[TIER_STATIC[TIERS[t]]] = hw.tiers[t].devices * r["time"]
    return out


def step_energy(system: str, r: dict, cfg: PamModelConfig, ctx: float,
                hw: Hardware | None = None, label: str | None = None) -> EnergyResult | None:
    """Energy per output token of one step result of ``system`` (None when it ran out of
    memory).  ``parts`` splits the counts into ``gemm``, ``attention`` (with PAM's migrations)
    and ``static``."""
    if r is None or r["oom"]:
        return None
    model = wl.get_model(cfg.model)
    hw = hw or Hardware.from_config(cfg)
    b = r["batch"]
    att = (_offload_counts(r, model, b, ctx) if system == "vLLM-offloading"
           else _pim_counts(r, model))
    parts = {"gemm": _gemm_counts(hw, model, b), "attention": att,
             "static": _static_counts(r, hw)}
    parts = {k: scale_counts(v, 1.0 / b) for k, v in parts.items()}
    return EnergyResult(label or system, add_counts(*parts.values()), r["time"] / b,
                        parts=parts)


def attention_joules(e: EnergyResult, r: dict, dynamic: bool = False) -> float:
    """J/token of attention alone (PAM Fig. 11's LS-PIM comparison): the attention part's
    actions (with PAM's migrations) plus, unless ``dynamic``, the static power over the
    attention's share of the step."""
    t = table(e.node)
    share = 0.0 if dynamic else (r["attention"] + r["migration"]) / r["time"]
    return t.joules(e.parts["attention"]) + t.joules(e.parts["static"]) * share


def figure11(seed: int = 0) -> dict:
    """PAM Fig. 11's four cases (§7.3: LLaMA3-70B and OPT-175B on WildChat and Arxiv_sum at
    the batches the paper names): per case and system, (energy result, step result); the
    energy result is None on OOM."""
    out = {}
    for (model, dataset), batch in FIG11_CASES.items():
        cfg = PamModelConfig(model=model, dataset=dataset, seed=seed)
        lengths = request_lengths(dataset, seed)
        row = {}
        for s in SYSTEMS:
            r = step(s, cfg, batch, lengths)
            row[s] = (step_energy(s, r, cfg, lengths["ctx"]), r)
        out[(model, dataset, batch)] = row
    return out
