"""Fits: the inputs a fit reads from results files and the models fitted (``models/``)."""
