"""What the PAPI system model assumes where the paper gives no figure: (parameter, value, why)."""
from __future__ import annotations

from pimforge.software import devices as dev
from pimforge.software.papi.config import HBM, TASKS
from pimforge.software.papi.hardware import BANK_GROUP, LINK_LATENCY_S, PRICES
from pimforge.software.papi.workload import AI_CONTEXT

__all__ = ["assumptions"]

SHARED = ("GPU achievable fraction", "link efficiency")


def _own() -> list:
    pj = PRICES.pj
    tasks = "; ".join(f"{k}: in {t.in_mean:g} +- {t.in_std:g}, out {t.out_mean:g} +- "
                      f"{t.out_std:g} tokens" for k, t in TASKS.items())
    return [
        ("Dolly request lengths", tasks + " (lognormal, clipped to 8..2,048)",
         "no network here and the paper gives no lengths: creative-writing answers (stories, "
         "poems) taken about twice as long as general-qa answers; instructions a sentence or "
         "two, no context passage"),
        ("speculation", "every speculated token accepted: TLP tokens per iteration",
         "§7 gives no acceptance rate; the draft model's time is left out"),
        ("HBM3 bank", f"{HBM.banks_std} banks of 16 MiB per die, 8 dies (16 GB)",
         "§7.1 gives 16 GB stacks and 12 GB FC-PIM (96 banks): 96 / 128 = 12 / 16"),
        ("banks per die", f"eq. 3's bound rounded down to whole groups of {BANK_GROUP} banks",
         "§6.1: 96 banks = 3 bank groups (97.6 by eq. 4)"),
        ("PIM energies", f"DRAM access {pj('dram:hbm_pim:bit'):g} pJ/bit "
         f"({256 * pj('dram:hbm_pim:bit'):.0f} pJ per 32-byte column), FPU "
         f"{pj('pim:mac:e5m10'):g} pJ/MAC, transfer {pj('pim:xfer:e5m10'):g} pJ/MAC (energy "
         f"table entries dram:hbm_pim:bit, pim:mac:e5m10, pim:xfer:e5m10)",
         "chosen so Fig. 7a (96.7% DRAM at reuse 1), 7b (33.1% at reuse 64) and 7c (1P1B over "
         "116 W without reuse; 4P1B under it from reuse 4; 1P2B under it) hold"),
        ("power cap", "a stack's PIM energy <= (116 W - background) x its time",
         "§6.1 footnote 2: the budget of an HBM3 cube; the cap throttles FPU activity"),
        ("stack background", f"{pj('static:hbm_stack'):g} W (refresh, idle) for all 90 stacks",
         "not given"),
        ("GPU energy", f"{pj('gpu:flop:e5m10'):g} pJ/FLOP, {pj('dram:hbm:bit'):g} pJ/bit "
         f"HBM, {pj('static:gpu'):g} W static per A100 while it runs a kernel (idle GPUs "
         f"power-gated)", "the paper's GPU energy model is not given"),
        ("links", f"NVLink 3 (300 GB/s per GPU) to the 5 FC stacks of each GPU; one PCIe 5.0 "
         f"x16 per 10 Attn-PIM stacks; {LINK_LATENCY_S * 1e6:g} us per transfer; "
         f"{pj('link:nvlink:bit'):g} / {pj('link:pcie:bit'):g} pJ/bit",
         "§6.3 names the link types only"),
        ("FC mapping on PIM", "2D blocks over every processing group; behind each GPU link "
         "the column split moving the fewest bytes", "§6.4 gives the block scheme only"),
        ("attention mapping", "(request, head) pairs round-robin over the 60 stacks, each "
         "pair's K^T / V rows over the stack's groups", "§6.4 (AttAcc's mapping) in outline"),
        ("softmax, layernorm, reductions", "free (buffer die / GPU, overlapped)", "not given"),
        ("prefill", "on the GPUs (PIM stacks in the PIM-only systems), one pass over all "
         "prompt tokens", "§7.4: prefill is compute-bound and runs on the GPU"),
        ("§3 attention point", f"{AI_CONTEXT}-token context", "Fig. 2 does not state it"),
        ("alpha", "the largest RLP x TLP at which one layer's FC on 30 FC-PIM stacks is not "
         "slower than on the six A100s", "§5.2.1: 'offline iterative evaluation'; no value"),
        ("GPT-3 66B", "OPT-66B's shape", "§7.1 cites OPT [32] for it"),
    ]


def assumptions() -> list:
    """(parameter, value, why) for everything the paper does not give, plus the shared ones."""
    return _own() + [a for a in dev.assumptions() if a[0] in SHARED]
