"""Pyramid QA layers: overlays and levels as napari layer data (no Qt, no viewer), and the
worker jobs that read, cap and build them.

Store coordinates -> napari layer data, with the same conventions as
:mod:`..layerdata.build`: napari axis ``k`` is store column ``StoreInfo.order[k]`` (non-space
axes first, then the space axes reversed: ``(t, x, y, z)`` -> ``(t, z, y, x)``), data in units
of the layer ``scale`` (the store's level-0 bin shape), world = ``data * scale`` = store
coordinates in napari order.

* :func:`box_outline_segments` -- outlines of axis-aligned boxes as segments: a full wireframe
  when every store axis is displayed, else the outlines in the displayed axes of the boxes
  the current slab cuts, placed on the slab (napari's 2-D Vectors show a segment when its
  start lies in the slab).
* :func:`segments_layer` -- segments as a Vectors layer data tuple.
* :func:`highlight` / :func:`harmonise_colours` -- recolour layer data tuples built by
  :mod:`..layerdata.build` (isolated objects; side-by-side levels coloured alike).
* Worker jobs (:func:`side_by_side_job`, :func:`isolate_job`, :func:`links_job`): generators
  run by a :class:`.jobs.QATask` on the plugin's worker thread that read the store, cap what
  will be drawn to the vertex budget (:func:`.compute.select_within`,
  :func:`..lod.view_geometry.subset_to_budget`) and build the layers; they yield
  :class:`.compute.QAProgress` between steps and return what the model adds on the UI thread.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

import numpy as np

from napari_zarr_vectors.format import pyramid as core
from napari_zarr_vectors.format.geometry import Geometry, GeometryType, flat_paths
from napari_zarr_vectors.format.query import chunks_in_bbox, normalise_bbox
from napari_zarr_vectors.napari.colour.defaults import categorical_rgba, flat_colormap
from napari_zarr_vectors.napari.layerdata.build import (
    OBJECT_ID,
    LayerData,
    StoreInfo,
    _common_kwargs,
    _line_width,
    layers_from_geometry,
)
from napari_zarr_vectors.napari.layerdata.placement import Placement
from napari_zarr_vectors.napari.layerdata.store_info import store_info
from napari_zarr_vectors.napari.lod.cache import shared_cache
from napari_zarr_vectors.napari.lod.view_geometry import Box, object_rank, subset_to_budget
from napari_zarr_vectors.napari.lod.viewer_layers import make_layer
from napari_zarr_vectors.napari.qa.compute import (
    SIDE_BY_SIDE,
    QAProgress,
    chunk_batches,
    select_within,
    shown_of,
    side_by_side_note,
)
from napari_zarr_vectors.napari.qa.jobs import Job

#: Overlay colours (RGBA).
CHUNK_COLOUR = (1.0, 0.75, 0.1, 1.0)
BIN_COLOUR = (0.3, 0.9, 1.0, 1.0)
#: opacity of link arrows (thin and see-through: the data stays readable under them)
LINK_ALPHA = 0.45
#: width of a link arrow, times the store's line width
LINK_WIDTH = 0.5
HIGHLIGHT_COLOUR = (1.0, 0.0, 1.0, 1.0)

if TYPE_CHECKING:
    from napari_zarr_vectors.format.api import GeometryStore


def link_colour(fine_level: int) -> np.ndarray:
    """The colour of the links leaving ``fine_level``: one hue per level (the same at every
    call), :data:`LINK_ALPHA` opaque."""
    rgba = categorical_rgba(np.array([int(fine_level)]))[0].astype(np.float32)
    rgba[3] = LINK_ALPHA
    return rgba


def box_corner_edges(nd: int) -> tuple[np.ndarray, np.ndarray]:
    """Edges of the unit ``nd``-cube: two ``(E, nd)`` 0/1 arrays (start and end corners),
    ``E = nd * 2**(nd - 1)``."""
    corners = np.array(np.meshgrid(*[[0, 1]] * nd, indexing="ij")).reshape(nd, -1).T
    a, b = np.nonzero(np.triu(np.abs(corners[:, None, :] - corners[None, :, :]).sum(-1) == 1))
    return corners[a], corners[b]


def box_outline_segments(
    lo: np.ndarray,
    hi: np.ndarray,
    displayed: Sequence[int] | None = None,
    point: np.ndarray | None = None,
    thickness: np.ndarray | None = None,
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Outline segments of boxes ``[lo, hi)`` (``(K, ndim)`` each, store order).

    ``displayed`` are the store axes on screen (default: all). Boxes are kept when they cut
    the slab ``point +- thickness / 2`` on every other axis, and their outline in the
    displayed axes is placed at ``point`` there. Returns ``(starts, ends, box)``: ``(S, ndim)``
    segment ends and the index of each segment's box (``E`` consecutive segments per box,
    ``E = 4`` for two displayed axes, ``12`` for three).
    """
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    ndim = lo.shape[1] if lo.ndim == 2 else 0
    disp = list(range(ndim)) if displayed is None else sorted(int(a) for a in displayed)
    other = [a for a in range(ndim) if a not in disp]
    idx = boxes_in_slab(lo, hi, disp, point, thickness)
    a, b = box_corner_edges(len(disp))
    n_edges = len(a)
    box = np.repeat(idx, n_edges)
    starts = np.empty((len(box), ndim))
    ends = np.empty((len(box), ndim))
    if len(box):
        span = (hi - lo)[box][:, disp]
        base = lo[box][:, disp]
        starts[:, disp] = base + np.tile(a, (len(idx), 1)) * span
        ends[:, disp] = base + np.tile(b, (len(idx), 1)) * span
        if other:
            starts[:, other] = np.asarray(point, dtype=np.float64)[other]
            ends[:, other] = starts[:, other]
    return starts, ends, box


def boxes_in_slab(
    lo: np.ndarray,
    hi: np.ndarray,
    displayed: Sequence[int],
    point: np.ndarray | None = None,
    thickness: np.ndarray | None = None,
) -> np.ndarray:
    """Rows of the boxes ``[lo, hi)`` that cut the slab ``point +- thickness / 2`` on every
    axis not in ``displayed`` (all rows when every axis is displayed)."""
    lo = np.asarray(lo, dtype=np.float64)
    hi = np.asarray(hi, dtype=np.float64)
    ndim = lo.shape[1] if lo.ndim == 2 else 0
    other = [a for a in range(ndim) if a not in set(int(d) for d in displayed)]
    if not other:
        return np.arange(len(lo))
    p = np.asarray(point, dtype=np.float64)[other]
    t = np.zeros(len(other)) if thickness is None else np.asarray(thickness, np.float64)[other]
    # half-open boxes [lo, hi) against the closed slab [p - t/2, p + t/2]
    return np.flatnonzero(np.all((lo[:, other] <= p + t / 2) & (hi[:, other] > p - t / 2), axis=1))


def overlay_info(store: GeometryStore, level: int) -> StoreInfo:
    """The :class:`StoreInfo` of an overlay (store metadata only: no object attributes or
    groups are read)."""
    lo, hi = store.bounds
    placement = Placement.of(store)
    return StoreInfo(
        path=str(store.path),
        name=str(store.name),
        geometry_type=str(store.geometry_type),
        axes=tuple(str(a) for a in store.axes),
        units=tuple(store.units),
        bounds=(np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)),
        level=int(level),
        scale=placement.scale,
        affine=placement.affine,
        stored_space=placement.stored_space,
        axis_types=tuple(getattr(store, "axis_types", None) or ()),
    )


def segments_layer(
    starts: np.ndarray,
    ends: np.ndarray,
    info: StoreInfo,
    *,
    role: str,
    label: str,
    colour: Sequence[float] | np.ndarray = CHUNK_COLOUR,
    width: float | None = None,
    style: str = "line",
    features: dict[str, np.ndarray] | None = None,
    extra: dict[str, Any] | None = None,
) -> LayerData:
    """Segments ``starts[i] -> ends[i]`` (store order) as a Vectors layer data tuple with the
    store's scale, axis labels and units, named ``"<store> <label>"`` (+ level)."""
    placement = info.placement
    p0 = placement.to_layer_data(starts)
    p1 = placement.to_layer_data(ends)
    data = np.stack([p0, p1 - p0], axis=1) if len(p0) else np.empty((0, 2, info.ndim))
    kwargs = _common_kwargs(info, role, label, None, extra=extra)
    kwargs.update(
        edge_color=np.asarray(colour, dtype=np.float32),
        edge_width=float(_line_width(info) if width is None else width),
        length=1.0,
        vector_style=style,
    )
    if features:
        kwargs["features"] = features
    return data, kwargs, "vectors"


# --------------------------------------------------------------------------------------------
# recolouring layer data built by ..layerdata.build
# --------------------------------------------------------------------------------------------

_COLOUR_KEYS = {
    "points": ("face_color", "face_colormap", "face_contrast_limits"),
    "vectors": ("edge_color", "edge_colormap", "edge_contrast_limits"),
    "shapes": ("edge_color", "edge_colormap", "edge_contrast_limits"),
}


def highlight(layer: LayerData, colour: Sequence[float] = HIGHLIGHT_COLOUR) -> LayerData:
    """The same layer in one flat, loud colour (an isolated selection)."""
    data, kwargs, kind = layer
    kwargs = dict(kwargs)
    if kind in _COLOUR_KEYS:
        main, cmap, limits = _COLOUR_KEYS[kind]
        kwargs.pop(cmap, None)
        kwargs.pop(limits, None)
        kwargs[main] = np.asarray(colour, dtype=np.float32)
        if kind == "points":
            kwargs["size"] = float(kwargs.get("size", 1.0)) * 1.5
    elif kind == "tracks":
        n = len(data)
        features = dict(kwargs.get("features") or {})
        features["zv_highlight"] = np.zeros(n)
        kwargs["features"] = features
        kwargs["color_by"] = "zv_highlight"
        kwargs["colormaps_dict"] = {
            **dict(kwargs.get("colormaps_dict") or {}),
            "zv_highlight": flat_colormap("zv_highlight", colour),
        }
    elif kind == "surface":
        kwargs["colormap"] = flat_colormap("zv_highlight", colour)
    return data, kwargs, kind


def harmonise_colours(layer: LayerData) -> LayerData:
    """Colour a level's layer so every level of a store looks alike: by object id (stable
    per-id colours) where the layer has object ids, else by segment direction (tracks).
    Vertex attributes exist at level 0 only, so the reader's default colouring may differ
    between levels."""
    data, kwargs, kind = layer
    kwargs = dict(kwargs)
    features = kwargs.get("features") or {}
    ids = features.get(OBJECT_ID) if hasattr(features, "get") else None
    if kind in _COLOUR_KEYS and ids is not None and len(ids):
        main, cmap, limits = _COLOUR_KEYS[kind]
        kwargs.pop(cmap, None)
        kwargs.pop(limits, None)
        kwargs[main] = categorical_rgba(np.asarray(ids))
        _set_colour_by(kwargs, OBJECT_ID)
    elif kind == "tracks":
        maps = dict(kwargs.get("colormaps_dict") or {})
        direction = next((k for k in maps if k.endswith("direction")), None)
        if direction is not None:
            kwargs["color_by"] = direction
            _set_colour_by(kwargs, direction)
    return data, kwargs, kind


def _set_colour_by(kwargs: dict[str, Any], name: str) -> None:
    meta = dict(kwargs.get("metadata") or {})
    zv = dict(meta.get("zarr_vectors") or {})
    zv["colour_by"] = name
    meta["zarr_vectors"] = zv
    kwargs["metadata"] = meta


# --------------------------------------------------------------------------------------------
# worker jobs (run on the worker thread; no viewer, no Qt)
# --------------------------------------------------------------------------------------------


def make_layers(items: Sequence[LayerData]) -> list[Any]:
    """napari layers from data tuples, built on the worker thread (constructing a layer is
    the larger part of adding one; napari layer models hold no Qt objects, the canvas
    visuals are made when the UI thread adds the layer)."""
    return [make_layer(data, kwargs, kind) for data, kwargs, kind in items]


@dataclass
class Built:
    """Layers a job built (not yet in a viewer), and what they show of what was read."""

    items: list[Any]
    note: str
    level: int
    shown: int = 0
    total: int = 0


def _objects_noun(geometry_type: str) -> str:
    return "points" if geometry_type == "point_cloud" else "objects"


def _capped_read(
    store: GeometryStore,
    level: int,
    budget: int,
    cancel: threading.Event,
    **read: Any,
) -> tuple[Any, Any, str]:
    """Read ``level`` (``read``: bbox / object_ids) and keep what fits the budget, thinned
    like the level of detail. Returns the geometry, the :class:`..lod.view_geometry.Subset`
    and its noun (``objects`` / ``points`` / ``vertices``)."""
    geometry = store.read(level, cache=shared_cache(), cancel=cancel, **read)
    sub = subset_to_budget(geometry, budget)
    noun = _objects_noun(store.geometry_type) if sub.kind == "objects" else "vertices"
    return sub.geometry, sub, noun


def _cap_note(sub: Any, noun: str) -> str:
    """What a capped read shows of what it read."""
    note = shown_of(sub.items_shown, sub.items_in_view, noun)
    if sub.vertices_shown < sub.vertices_in_view:
        note += f"; {sub.vertices_shown:,} of {sub.vertices_in_view:,} rows"
    return note


def side_by_side_job(
    store: GeometryStore,
    levels: Sequence[int],
    bboxes: dict[int, Box],
    budget: int,
    opacity: float,
    cancel: threading.Event,
) -> Job:
    """Read each level (inside ``bboxes[level]`` when given), cap it to ``budget`` and build
    its layers, coloured alike (:func:`harmonise_colours`), named ``… [level N]``. Each
    note names what it counts (:func:`.compute.side_by_side_note`)."""
    out: list[Built] = []
    for i, level in enumerate(levels):
        yield QAProgress(i, len(levels), f"reading level {level}")
        boxed = bboxes.get(level) is not None
        geometry, sub, noun = _capped_read(
            store, int(level), budget, cancel, bbox=bboxes.get(level)
        )
        info = store_info(store, int(level))
        items = []
        for item in layers_from_geometry(geometry, info, bounds_layer=False):
            data, kwargs, kind = harmonise_colours(item)
            kwargs["name"] = f"{kwargs['name'].split(' (level')[0]} [level {level}]"
            kwargs["metadata"]["zarr_vectors"]["qa"] = SIDE_BY_SIDE
            kwargs["opacity"] = float(opacity)
            kwargs.setdefault("blending", "translucent")
            items.append((data, kwargs, kind))
        layers = make_layers(items)
        rows = sum(len(layer.data) for layer in layers)
        stored = store.level(int(level)).vertex_count
        note = side_by_side_note(
            sub.items_shown,
            sub.items_in_view,
            noun,
            rows,
            stored,
            boxed=boxed,
            collapsed=single_vertex_lines(geometry),
        )
        out.append(Built(layers, note, int(level), sub.items_shown, sub.items_in_view))
    return out


def single_vertex_lines(geometry: Geometry) -> int:
    """How many of a line geometry's lines have one vertex (a coarse level merged both
    ends): objects of the level that a Vectors layer draws no segment for."""
    if geometry.geometry_type != GeometryType.LINE or not geometry.paths:
        return 0
    _, lengths = flat_paths(geometry.paths)
    return int(np.count_nonzero(lengths < 2))


def isolate_job(
    store: GeometryStore,
    ids: np.ndarray,
    pair: tuple[int, int],
    budget: int,
    cancel: threading.Event,
) -> Job:
    """Read objects ``ids`` at the finer level of ``pair``, capped to ``budget``, as
    highlighted layers (role ``qa_dropped``)."""
    fine, coarse = pair
    yield QAProgress(0, 1, f"reading {len(ids):,} object(s) at level {fine}")
    geometry, sub, noun = _capped_read(store, fine, budget, cancel, object_ids=ids)
    note = _cap_note(sub, noun)
    info = store_info(store, fine)
    items = []
    for item in layers_from_geometry(geometry, info, bounds_layer=False):
        data, kwargs, kind = highlight(item)
        kwargs["name"] = f"{store.name} dropped {fine}→{coarse} ({len(ids)} objects)"
        meta = kwargs["metadata"]["zarr_vectors"]
        meta.update(role="qa_dropped", object_ids=np.asarray(ids).tolist(), pair=[fine, coarse])
        items.append((data, kwargs, kind))
    return Built(make_layers(items), note, fine)


def links_job(
    store: GeometryStore,
    level: int,
    delta: int,
    object_ids: Sequence[int] | None,
    bbox: Box | None,
    budget: int,
    scope: str,
    cancel: threading.Event,
) -> Job:
    """Resolve the stored links ``level -> level + delta`` (see
    :func:`~napari_zarr_vectors.format.pyramid.cross_level_segments`), keep at most
    ``budget / 2`` of them (two ends an arrow; thinned by object like the level of detail)
    and build their Vectors layer (role ``qa_links``). When the box (or level) holds more
    than :data:`LINK_READ_CAP` links, only those of a spread sample of its chunks are read
    (:func:`_sampled_link_boxes`) and the note says so."""
    sample = None
    if object_ids is None and delta > 0:
        sample = _sampled_link_boxes(store, level, bbox)
    if sample is not None:
        boxes = sample[0]
    elif object_ids is not None or delta < 0:
        boxes = [bbox]
    else:
        boxes = _link_boxes(store, level, bbox)
    parts = []
    for i, box in enumerate(boxes):
        yield QAProgress(i, len(boxes) + 1, f"reading link records ({i + 1}/{len(boxes)})")
        parts.append(
            core.cross_level_segments(
                store,  # type: ignore[arg-type]  # links: a Store's own arrays
                level,
                delta,
                object_ids=object_ids,
                bbox=box,
                cache=shared_cache(),
            )
        )
    seg = _concat_segments(parts, store, level, delta)
    yield QAProgress(len(boxes), len(boxes) + 1, f"building {len(seg):,} link(s)")
    keep = select_within(budget // 2, ids=seg.fine_object_ids, positions=seg.fine)
    ids = None if seg.fine_object_ids is None else seg.fine_object_ids[keep]
    info = overlay_info(store, seg.fine_level)
    data, kwargs, kind = segments_layer(
        seg.fine[keep],
        seg.coarse[keep],
        info,
        role="qa_links",
        label=f"links {seg.fine_level}→{seg.coarse_level}",
        colour=link_colour(seg.fine_level),
        width=LINK_WIDTH * _line_width(info),
        style="arrow",
        features=None if ids is None else {OBJECT_ID: ids},
        extra={
            "qa_levels": [seg.fine_level, seg.coarse_level],
            "scope": scope,
            "object_ids": None if object_ids is None else list(object_ids),
            "records": seg.n_records,
            "missing": seg.n_missing,
            "links": len(seg),
            "links_drawn": int(keep.sum()),
        },
    )
    kwargs["name"] = f"{store.name} links {seg.fine_level}→{seg.coarse_level}"
    text = shown_of(int(keep.sum()), len(seg), "link(s)")
    text += f" level {seg.fine_level} → {seg.coarse_level}"
    if sample is not None:
        where = "the visible box" if bbox is not None else f"level {level}"
        text += (
            f", read in {len(boxes):,} of the {sample[1]:,} chunks of {where} "
            "(a spread sample: reading every link would take seconds)"
        )
    if seg.n_missing:
        text += f"; {seg.n_missing:,} record(s) with a missing endpoint left out"
    return Built(
        make_layers([(data, kwargs, kind)]), text, seg.fine_level, int(keep.sum()), len(seg)
    )


#: links (about the fine level's vertices) that a links action reads at most: above it, a
#: spread sample of chunks holding about this many is read
LINK_READ_CAP = 100_000

#: a fixed odd multiplier per chunk-key axis (the sample's pseudo-random rank of a chunk)
_KEY_MIX = np.array([73856093, 19349663, 83492791, 2654435761], np.int64)


def _sampled_link_boxes(
    store: GeometryStore, level: int, bbox: Box | None
) -> tuple[list[Any], int] | None:
    """World boxes of a spread sample of the chunks of ``level`` (within ``bbox``) holding
    about :data:`LINK_READ_CAP` links, and the number of chunks sampled from; ``None`` when
    reading them all stays under the cap (or the chunk keys are not spatial only). A chunk's
    place in the sample is a fixed rank of its key (the same chunks at every call)."""
    info = store.level(level)
    listed = np.asarray(store.chunks(level), np.int64)
    total = int(info.vertex_count or 0)
    ndim = store.ndim
    if listed.ndim != 2 or listed.shape[1] != ndim or len(listed) == 0 or not total:
        return None
    box = None if bbox is None else normalise_bbox(bbox, ndim)
    chunks = listed if box is None else chunks_in_bbox(listed, info, *box)
    n = max(int(LINK_READ_CAP * len(listed) // total), 1)
    if n >= len(chunks) or ndim > len(_KEY_MIX):
        return None
    rank = object_rank(np.bitwise_xor.reduce(chunks * _KEY_MIX[:ndim], axis=1))
    picked = chunks[np.argsort(rank, kind="stable")[:n]]
    cs = np.asarray(info.chunk_shape, np.float64)
    lo = picked * cs + info.chunk_origin
    hi = np.nextafter((picked + 1) * cs + info.chunk_origin, -np.inf)
    if box is not None:
        lo, hi = np.maximum(lo, box[0]), np.minimum(hi, box[1])
    return list(zip(lo, hi, strict=True)), len(chunks)


#: chunks per step when resolving the links of a whole level or box (see
#: :func:`.compute.chunk_batches`)
LINK_BATCH_CHUNKS = 16


def _link_boxes(store: GeometryStore, level: int, bbox: Box | None) -> list[Any]:
    """World boxes of whole chunks of ``level`` (within ``bbox`` when given), a few chunks
    each: one :func:`~napari_zarr_vectors.format.pyramid.cross_level_segments` call per box.
    Each box ends just below its last chunk's upper face (chunks are half-open), so a vertex
    belongs to exactly one box."""
    info = store.level(level)
    ndim = store.ndim
    cs = np.asarray(info.chunk_shape, np.float64)
    origin = info.chunk_origin
    s_lo, s_hi = (np.asarray(b, np.float64) for b in store.bounds)
    out = []
    for k_lo, k_hi in chunk_batches(store.chunks(level), ndim, LINK_BATCH_CHUNKS):
        lo = np.minimum(k_lo * cs + origin, s_lo)
        hi = np.nextafter((k_hi + 1) * cs + origin, -np.inf)
        lo[:2] = (k_lo * cs + origin)[:2]
        hi[2:] = np.maximum(hi, s_hi)[2:]
        if bbox is not None:
            lo = np.maximum(lo, np.asarray(bbox[0], np.float64))
            hi = np.minimum(hi, np.asarray(bbox[1], np.float64))
            if np.any(lo > hi):
                continue
        out.append((lo, hi))
    return out


def _concat_segments(
    parts: list[core.CrossLevelSegments], store: GeometryStore, level: int, delta: int
) -> core.CrossLevelSegments:
    """One :class:`~napari_zarr_vectors.format.pyramid.CrossLevelSegments` of the parts."""
    if len(parts) == 1:
        return parts[0]
    fine_level, coarse_level = sorted((level, level + delta))
    if not parts:
        z = np.empty((0, store.ndim), np.float64)
        ids = None if store.object_index(fine_level) is None else np.empty(0, np.int64)
        return core.CrossLevelSegments(z, z.copy(), ids, 0, fine_level, coarse_level)
    part_ids = [p.fine_object_ids for p in parts]
    return core.CrossLevelSegments(
        np.concatenate([p.fine for p in parts]),
        np.concatenate([p.coarse for p in parts]),
        # the parts share a level: every one or none of them carries ids
        None if part_ids[0] is None else np.concatenate(cast("list[np.ndarray]", part_ids)),
        sum(p.n_missing for p in parts),
        fine_level,
        coarse_level,
    )
