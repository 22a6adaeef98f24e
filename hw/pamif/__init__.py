"""PAM interface units: KV re-layout between memory tiers (PAM §6.2, Fig. 8d)."""
