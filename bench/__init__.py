"""Benchmarks (`make bench`): each module exposes ``run() -> dict`` and prints its figures."""
