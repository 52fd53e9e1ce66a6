"""Filtering the layers of a store without a level-of-detail controller (a
:class:`.targets.StaticTarget`): rows of the objects allowed kept, the rest put aside in a
snapshot and given back when the filter ends."""

from __future__ import annotations

import warnings
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import numpy as np

from napari_zarr_vectors.napari.colour.live import apply_colour, colour_spec_of, layer_kind
from napari_zarr_vectors.napari.layerdata.build import OBJECT_ID

if TYPE_CHECKING:
    from napari.layers import Layer

    from napari_zarr_vectors.napari.types import LayerData


def layer_object_ids(layer: Layer) -> np.ndarray | None:
    """Object id of every feature row (``None`` when the layer has no ``object_id``)."""
    features = getattr(layer, "features", None)
    if features is None or OBJECT_ID not in features:
        return None
    return features[OBJECT_ID].to_numpy()


@dataclass
class LayerSnapshot:
    """A layer's rows before a filter: data, features and what its kind colours them by."""

    data: Any
    features: Any
    extra: dict


def filter_layer(layer: Layer, allowed: np.ndarray | None, full: dict[int, LayerSnapshot]) -> None:
    """Show only the rows of objects ``allowed`` (``None``: every row again): Points hide
    the others, other kinds are given the kept rows of their snapshot in ``full`` (taken on
    the first filter, dropped when every row is back), colours applied again."""
    kind = layer_kind(layer)
    if kind == "points":
        ids = layer_object_ids(layer)
        if ids is None:
            return
        layer.shown = np.ones(len(ids), bool) if allowed is None else np.isin(ids, allowed)
        return
    key = id(layer)
    if key not in full:
        if allowed is None:
            return
        full[key] = _snapshot(layer, kind)
    snap = full[key]
    ids = row_object_ids(kind, snap)
    if ids is None:
        return
    keep = np.ones(len(ids), bool) if allowed is None else np.isin(ids, allowed)
    _restore(layer, kind, snap, keep)
    if allowed is None:
        del full[key]
    spec = colour_spec_of(layer)
    if spec is not None:
        apply_colour(layer, spec)


def _snapshot(layer: Layer, kind: str) -> LayerSnapshot:
    features = layer.features.copy()
    extra: dict[str, Any] = {}
    data: LayerData
    if kind == "tracks":
        extra = {"color_by": layer.color_by, "colormaps_dict": dict(layer.colormaps_dict)}
        data = np.asarray(layer.data).copy()
    elif kind == "surface":
        data = tuple(np.asarray(d).copy() for d in layer.data[:2])
        extra = {"vertex_values": np.asarray(layer.vertex_values).copy()}
    elif kind == "shapes":
        data = [np.asarray(d).copy() for d in layer.data]
        extra = {"shape_type": list(layer.shape_type), "edge_color": layer.edge_color.copy()}
    else:  # vectors
        data = np.asarray(layer.data).copy()
        extra = {"edge_color": np.asarray(layer.edge_color).copy()}
    return LayerSnapshot(data, features, extra)


def row_object_ids(kind: str, snap: LayerSnapshot) -> np.ndarray | None:
    """The object id of every row of ``snap`` (``None``: its features hold none)."""
    if OBJECT_ID not in snap.features:
        return None
    return snap.features[OBJECT_ID].to_numpy()


def _restore(layer: Layer, kind: str, snap: LayerSnapshot, keep: np.ndarray) -> None:
    features = snap.features[keep].reset_index(drop=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        warnings.simplefilter("ignore", UserWarning)  # Tracks: "color_by key not present"
        if kind == "tracks":
            layer.data = snap.data[keep]
            layer.features = features
            layer.colormaps_dict = dict(snap.extra["colormaps_dict"])
            if snap.extra["color_by"] in layer.properties_to_color_by:
                layer.color_by = snap.extra["color_by"]
        elif kind == "surface":
            vertices, faces = snap.data
            new_index = np.cumsum(keep) - 1
            face_ok = keep[faces].all(1)
            values = snap.extra["vertex_values"]
            layer.data = (vertices[keep], new_index[faces[face_ok]], values[..., keep])
            layer.features = features
        elif kind == "shapes":
            rows = np.flatnonzero(keep)
            layer.selected_data = set()
            layer.data = [snap.data[i] for i in rows]
            if len(rows):
                layer.shape_type = [snap.extra["shape_type"][i] for i in rows]
            layer.features = features
            if not _colour_by_feature(layer, "edge"):
                layer.edge_color = snap.extra["edge_color"][keep]
        else:  # vectors
            layer.data = snap.data[keep]
            layer.features = features
            if not _colour_by_feature(layer, "edge"):
                layer.edge_color = snap.extra["edge_color"][keep]


def _colour_by_feature(layer: Layer, prefix: str) -> bool:
    mode = str(getattr(layer, f"{prefix}_color_mode", "direct"))
    return mode.lower().endswith(("colormap", "cycle"))
