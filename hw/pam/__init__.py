"""PAM (memory-tiered processing in memory for LLM attention) units: online softmax, the
local-attention processing unit, the reduction unit, and their device and system compositions."""
