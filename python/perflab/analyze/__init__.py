"""Analyses that read the results model: statistics, comparisons and models."""
