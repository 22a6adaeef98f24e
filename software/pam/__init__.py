"""The PAM system model: LLM decoding on GPUs with HBM-, DDR- and SSD-PIM tiers (PAM §4-7)."""
