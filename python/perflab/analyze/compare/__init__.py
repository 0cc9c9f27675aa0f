"""Two results files compared: paired ratios, bootstrap CIs and decisions, per engine."""
