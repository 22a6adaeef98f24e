"""The PAPI system model (GPU + FC-PIM / Attn-PIM with the dynamic scheduler, PAPI §5-§7)."""
