"""Browsing a store by meaning: object tables, filters, targets, picking, isolating, hover."""
