"""Pyramid QA without Qt: level statistics, overlays and background jobs."""
