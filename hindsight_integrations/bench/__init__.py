"""Benchmarks shipped with the package so `hindsight bench ...` works wherever it is installed."""
