"""A real LLM on the units: a llama-architecture GGUF (SmolLM2-135M-Instruct by default) decoded
token by token, with the operations each paper puts on its hardware run through the units'
golden models (or their Verilog) and the rest on the host."""
