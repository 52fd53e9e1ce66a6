"""Byte decoders: payload bytes -> numpy arrays. Pure functions; no I/O."""
