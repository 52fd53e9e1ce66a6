"""Geometry to napari layer data and back: the layer builders, the store facts they need, export."""
