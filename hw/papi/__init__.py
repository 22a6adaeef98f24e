"""PAPI units: the arithmetic-intensity scheduler and the FC-PIM / Attn-PIM bank processing units (PAPI §5, §6)."""
