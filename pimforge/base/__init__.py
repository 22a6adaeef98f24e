"""The base layer: errors, config machinery, float formats, shared numerics and file output.

It imports nothing of pimforge above it (docs/dev/architecture.md).
"""
