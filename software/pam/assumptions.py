"""What the PAM system model assumes where the paper gives no figure: (parameter, value, why)."""
from __future__ import annotations

from pimforge.software import devices as dv
from pimforge.software import workloads as wl
from pimforge.software.pam import locality as loc
from pimforge.software.pam.config import ABLATION_BATCHES, PamModelConfig
from pimforge.software.pam.relayout import HOST

__all__ = ["assumptions"]


def _own() -> list:
    """The PAM model's own assumptions; the values that are config defaults come from them."""
    d, p = PamModelConfig(), loc.LocalityParams()
    tile = dv.PAM_TIERS["hbm"].tile
    small, large = ABLATION_BATCHES["LLaMA3-70B"]
    opt = ABLATION_BATCHES["OPT-175B"]
    return [("context drift", f"{d.drift:g} of the tokens re-draw their importance per step",
             "PAM shows drift (Fig. 3) but gives no rate; set so Algorithm 2 moves ~0.7%"),
            ("attention score shape", f"log-normal spread {p.sigma:g}, {p.window} recent tokens "
             f"+{p.recency_boost:g}, {p.sinks} sink tokens +{p.sink_boost:g}",
             "PAM Fig. 3 is qualitative"),
            ("Algorithm 2 ratios x, y", "from the tiers' cycle-model rates and token counts "
             "(balanced load)", "PAM profiles them offline and does not list them"),
            ("token sets on a tier", f"{tile}-token tiles, one per PU, merged by an RU",
             "PAM interleaves tokens over bank groups (§6.1) without a granularity"),
            ("GQA on the PUs", "each query head streams its KV head's tokens",
             "our pam_pu holds one query; PAM does not say how GQA maps"),
            ("without PAMattention (L-PIM, LS-PIM, the ablation)", "scores gathered to HBM "
             "and back over the tiers' host links; the ablation also computes whole "
             f"{loc.TILE}-token tiles (FlashDecoding's fixed tiling)",
             "PAM names FlashDecoding's tiling only"),
            ("HBM reserve", f"{d.hbm_reserve:.0%} for activations", "not given"),
            ("pipeline parallelism", "2 micro-batches keep both stages busy; each re-reads "
             "its stage's weights", "PAM §7.1 uses TP4 x PP2 without a schedule"),
            ("ablation batches and dataset", f"Arxiv_sum; {small:,}/{large:,} ({opt[0]}/{opt[1]} "
             "for OPT-175B): the KV cache spills into DDR, then SSD",
             "Fig. 12 says 'small' and 'large' only"),
            ("migration overlap", "KV moves overlap the GPU's GEMMs",
             "the PAM interface works in the background (§6.2)"),
            ("PAM interface instances", "one per channel of a device (HBM3 pseudo-channel, DDR4 "
             "rank, SSD channel); a move uses the narrower side's channels",
             "PAM puts an interface in each device's controller without a count"),
            ("host re-layout (Fig. 8c)", f"{HOST.interaction_s * 1e6:g} us of CPU-PIM "
             f"interaction per token and side, {HOST.copy_bw / 1e9:g} GB/s re-format, DRAM "
             f"tiers at {HOST.hash_eff:.0%} of their host bandwidth",
             "PAM gives only the 10% and 'more than 500 ms for MB-scale transfers'")]


def assumptions() -> list:
    """(parameter, value, why) for everything PAM does not give, plus the shared workload and
    device assumptions (the SmartSSD's are HILOS's)."""
    return (_own() + wl.assumptions()
            + [a for a in dv.assumptions() if not a[0].startswith("SmartSSD")])
