"""The run engine's analysis: per-benchmark summaries, ratios to a baseline, groups."""
