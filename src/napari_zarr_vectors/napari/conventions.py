"""Names the plugin gives: the key of its part of a layer's ``metadata``, a typed view of that
part (:class:`LayerMeta`) with the one accessor (:func:`meta_of`), the feature columns it adds
to layers (not store attributes), and how multi-channel attributes become feature columns
(:func:`split_channels`, :func:`regroup_channels`). Shared by the layer builders
(:mod:`napari_zarr_vectors.napari.layerdata.build`), their inverse, colour, hover and the
widgets."""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from typing import TYPE_CHECKING, Any

import numpy as np

if TYPE_CHECKING:
    from napari.layers import Layer

#: The key of the plugin's part of every layer's ``metadata``.
META = "zarr_vectors"

#: Names of the feature columns added by the adapter (not store attributes).
OBJECT_ID = "object_id"
GROUP_ID = "group_id"
GROUPS = "groups"
DIRECTION = "direction"

#: The label of the time axis napari's Tracks need and a store without time lacks (every
#: vertex at t = 0): it says there is no time, where napari lists the axes.
NO_TIME = "no time"

_CHANNEL = re.compile(r"^(?P<name>.+)\[(?P<i>\d+)\]$")


def meta_of(source: Layer | Mapping[str, object] | None) -> dict[str, Any] | None:
    """The plugin's block of a layer's metadata (the live dict: changes land on the layer),
    or ``None`` when there is none. ``source`` is a napari layer (anything with a
    ``metadata`` dict), or a layer data tuple's attributes mapping (with a ``"metadata"``
    entry)."""
    if source is None:
        return None
    if isinstance(source, Mapping):
        metadata = source.get("metadata")
    else:
        metadata = getattr(source, "metadata", None)
    block = metadata.get(META) if isinstance(metadata, Mapping) else None
    return block if isinstance(block, dict) else None


@dataclass(frozen=True)
class LayerMeta:
    """A typed view of ``layer.metadata["zarr_vectors"]``; the dict stays the on-layer format
    (:meth:`to_dict` gives it back key for key, in order).

    The layer builders write every field but the optional ones (``None`` here when a block
    lacks a key); the controller, colour, Pyramid QA and the browse widgets add keys of
    their own (``colour``, ``session``, ``qa``, ...), kept as stored in ``other``.
    """

    #: store path and display name
    path: str | None = None
    name: str | None = None
    geometry_type: str | None = None
    #: the level the data was read from
    level: int | None = None
    #: what the layer shows: ``"points"``, ``"edges"``, ``"bounds"``, ``"isolated"``, ...
    role: str | None = None
    #: store axis names, units and types (store column order)
    axes: tuple[str, ...] | None = None
    units: tuple[str | None, ...] | None = None
    axis_types: tuple[str, ...] | None = None
    #: ``"reversed"`` or ``"non-space first, space reversed"``
    axis_order: str | None = None
    #: the store column of each napari data axis
    napari_order: tuple[int, ...] | None = None
    #: world units per data unit (store order)
    scale: tuple[float, ...] | None = None
    #: ``(lo, hi)`` store bounds (store order)
    bounds: tuple[tuple[float, ...], ...] | None = None
    vertex_count: int | None = None
    #: chunk grid indices the layer holds
    chunks: list[list[int]] | None = None
    #: the feature the layer is coloured by
    colour_by: str | None = None
    #: Tracks string attributes: ``{feature: categories}`` (the column holds codes)
    categories: Mapping[str, list[str]] | None = None
    #: feature columns holding the object's attributes and groups
    object_columns: list[str] | None = None
    #: store -> world placement (store order) and the store column of each world axis
    world_affine: list[list[float]] | None = None
    world_order: tuple[int, ...] | None = None
    #: every other key, as stored
    other: Mapping[str, Any] = field(default_factory=dict)
    #: the block's keys in order (empty: every field that is set, in field order)
    keys: tuple[str, ...] = ()

    @classmethod
    def from_dict(cls, block: Mapping[str, object]) -> LayerMeta:
        """The view of a ``metadata["zarr_vectors"]`` dict."""
        known: dict[str, Any] = {k: v for k, v in block.items() if k in META_FIELDS}
        for key in _TUPLES:
            if known.get(key) is not None:
                known[key] = tuple(known[key])
        if known.get("bounds") is not None:
            known["bounds"] = tuple(tuple(b) for b in known["bounds"])
        other = {k: v for k, v in block.items() if k not in META_FIELDS}
        return cls(**known, other=other, keys=tuple(block))

    @classmethod
    def from_layer(cls, source: Layer | Mapping[str, object] | None) -> LayerMeta:
        """The view of a layer's (or a layer data tuple's attributes') block; every field
        ``None`` for layers the plugin did not make (see :func:`meta_of`)."""
        return cls.from_dict(meta_of(source) or {})

    def to_dict(self) -> dict[str, Any]:
        """The on-layer dict: lists for sequences; keys as read (:meth:`from_dict`), else
        every field that is set, then ``other``."""
        keys = self.keys or (*(k for k in META_FIELDS if getattr(self, k) is not None), *self.other)
        return {k: _stored(self.other[k] if k in self.other else getattr(self, k)) for k in keys}


#: the keys :class:`LayerMeta` types (the rest go to its ``other``), in field order
META_FIELDS = tuple(f.name for f in fields(LayerMeta) if f.name not in ("other", "keys"))
_TUPLES = ("axes", "units", "axis_types", "napari_order", "scale", "world_order")


def _stored(value: object) -> object:
    """A :class:`LayerMeta` field as the dict holds it (tuples as lists)."""
    if isinstance(value, tuple):
        return [_stored(v) for v in value]
    return value


def split_channels(name: str, values: np.ndarray) -> dict[str, np.ndarray]:
    """One feature column per channel: ``name`` or ``name[0]``, ``name[1]``, ...
    (:func:`regroup_channels` is the inverse)."""
    values = np.asarray(values)
    if values.ndim <= 1:
        return {name: values.reshape(-1)}
    flat = values.reshape(len(values), -1)
    if flat.shape[1] == 1:
        return {name: flat[:, 0]}
    return {f"{name}[{i}]": flat[:, i] for i in range(flat.shape[1])}


def regroup_channels(
    features: Mapping[str, np.ndarray], skip: Sequence[str] = ()
) -> dict[str, np.ndarray]:
    """``name[0]``, ``name[1]``, ... columns back into one ``(N, C)`` attribute ``name``
    (the inverse of :func:`split_channels`); columns named in ``skip`` dropped."""
    out: dict[str, np.ndarray] = {}
    channels: dict[str, dict[int, np.ndarray]] = {}
    for name, values in features.items():
        if name in skip:
            continue
        m = _CHANNEL.match(name)
        if m:
            channels.setdefault(m["name"], {})[int(m["i"])] = np.asarray(values)
        else:
            out[name] = np.asarray(values)
    for name, cols in channels.items():
        if sorted(cols) == list(range(len(cols))) and name not in out:
            out[name] = np.column_stack([cols[i] for i in range(len(cols))])
        else:
            out.update({f"{name}[{i}]": v for i, v in cols.items()})
    return out
