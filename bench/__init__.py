"""Benchmark suite for handler-kit: ``python -m bench`` / ``make bench``.

See ``bench/README.md`` for what is measured, how, and how to read the output.
"""
