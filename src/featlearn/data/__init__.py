"""Datasets: synthetic generators (and, later, real data loaders)."""
