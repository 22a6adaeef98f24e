"""The LoL-PIM system model (long-context LLM decoding on multi-node AiM PIM, LoL-PIM §4-§8)."""
