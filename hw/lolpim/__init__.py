"""LoL-PIM units: the DPA command dispatcher and I/O-aware ping-pong buffering (LoL-PIM §5, §6)."""
