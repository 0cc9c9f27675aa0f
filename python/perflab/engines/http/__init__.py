"""The http engine's Python side: plans, the native load engine driven step by step,
watching, and the distributed load (``cluster/``)."""
