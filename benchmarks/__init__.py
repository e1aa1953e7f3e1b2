"""Benchmarks and load: what the server and its emitters cost, next to the bare bridges and an SSE floor.

``python -m benchmarks.bench`` (``make bench``) measures; ``python -m benchmarks.load`` (``make load``)
drives mixed, verified traffic at a running server. Nothing here is imported by the product.
"""
