"""Peers' bucket layouts, one module each (object names built and parsed by one class per peer)."""
