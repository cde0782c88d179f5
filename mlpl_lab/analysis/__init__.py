"""Analyses of trained models and label matrices (diagnostics the notebooks plot)."""
