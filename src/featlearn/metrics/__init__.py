"""Metrics: Jacobians, NFA quantities, early-time theory, per-run measurement."""
