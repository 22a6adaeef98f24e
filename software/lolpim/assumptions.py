"""What the LoL-PIM system model assumes where the paper gives no figure: (parameter, value, why)."""
from __future__ import annotations

from pimforge.software import devices as dev
from pimforge.software.lolpim.config import (
    CHUNK_TOKENS, GPU_USABLE, HOST_SYNC_S, HUB_BW, LINK_LATENCY_S, MAX_CONTEXT, NODE, TASKS
)
from pimforge.software.lolpim.gpu import PAGE_TOKENS
from pimforge.software.lolpim.pim import ROW_TOKENS

__all__ = ["assumptions"]

SHARED = ("GPU achievable fraction",)


def _own() -> list:
    outs = ", ".join(f"{k} {t.out_len}" for k, t in TASKS.items())
    return [
        ("PIM node", f"{NODE.modules} modules x {NODE.chips} AiM chips of 1 GB; "
         f"{NODE.pus} PUs = {NODE.peak_flops / 1e12:.1f} TFLOPS, "
         f"{NODE.external_bw / 1e9:,.0f} GB/s external",
         "Tables 5 and 7 read together: 64 chips x 32 PUs x 32 GFLOPS = 65.5 TFLOPS and 64 "
         "chips x 64 GB/s = 4,096 GB/s per 64 GB node"),
        ("partitioning unit", "a module (16 channels); TP x PP = all modules of all nodes",
         "Fig. 11 counts TP x PP 'across all nodes'; the unit is not stated"),
        ("FC layers on PIM", "one GEMV per request (no weight reuse across the batch)",
         "AiM's PUs read W once per input vector through the 2 KB global buffer (§2.2)"),
        ("ITPP SV mapping", "the module's heads x d_h rows of V^T over its 16 channels, each "
         "channel's rows from one head", "§4.3: output dimension first (head dimension for V)"),
        ("HFA channel assignment", "round-robin (request, KV head) -> channel; the busiest "
         "channel sets the module's time", "§4.1: each request's per-head KV in one channel"),
        ("KV row granularity", f"{ROW_TOKENS} tokens (a DRAM row per PU)", "§5.1: row = T/256"),
        ("DPA / lazy chunk", f"{CHUNK_TOKENS} tokens", "§5.4 does not size the chunk"),
        ("static allocation", f"{MAX_CONTEXT:,} tokens per request", "§5.1: the maximum "
         "context length; Qwen1.5's CTL is 32K (Table 1)"),
        ("output length", outs, "LongBench's generation lengths (dataset2maxlen); §8 silent"),
        ("request lengths", "normal with Table 2's mean and std, clipped to its min and max",
         "Table 2 gives the four statistics only"),
        ("decode progress", "uniform over each request's output length (continuous batching)",
         "the batch mixes requests at every stage"),
        ("HUB link", f"{HUB_BW / 1e9:g} GB/s between modules of a node (TP all-reduces, PP "
         "hand-offs)", "Table 5's interface bandwidth; the intra-node topology is not given"),
        ("link latency", f"{LINK_LATENCY_S * 1e6:g} us per message", "not given"),
        ("host sync", f"{HOST_SYNC_S * 1e6:g} us per micro-batch round trip",
         "§4.2: bubbles from host-PIM synchronisation; not quantified"),
        ("softmax, layernorm", "on the HUB's EPU, overlapped with the PIM (head-wise pipelining)",
         "§4.3"),
        ("micro-batches", "the best count of 1, 2, 4, ... below PP, PP and 2 PP",
         "the paper tunes B_mu but does not list it"),
        ("GPU systems", f"one GPU per 64 GB node, TP/PP at their best over 10 GB/s links, "
         f"paged KV ({PAGE_TOKENS}-token blocks), {GPU_USABLE:.0%} of memory for weights and KV",
         "§8.1: matched external bandwidth and 10 GB/s links; the DGX simulator's mapping is not "
         "given"),
        ("GPU-HBM bandwidth", "3,352 GB/s (as Table 7 prints; an A100-80GB has 2,039 GB/s)",
         "Table 7"),
        ("embedding", "on the host (a lookup)", "not given"),
    ]


def assumptions() -> list:
    """(parameter, value, why) for everything the paper does not give, plus the shared ones."""
    shared = [a for a in dev.assumptions() if a[0] in SHARED]
    return _own() + shared
