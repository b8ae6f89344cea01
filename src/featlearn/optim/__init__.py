"""Optimizers: Speed Limited Optimization."""
