"""Vertices whose object the store does not record (``OBJECT_UNKNOWN``, issue 37): what the
plugin says of them is true for the store at hand (Draco-encoded or raw chunks), and they are
drawn in the legend's one "object unknown" grey, by default and by object-level features, in
2-D and 3-D.

Stores: navis' five meshes Draco-encoded by zarr-vectors 0.9.2 (``draco_meshes_store``) and a
raw mesh whose middle chunk's one fragment two objects name whole, as zarr-vectors 0.7 laid
meshes out (``shared_chunk_mesh_store``: ``corpus.zv_mesh_shared_chunk``).
"""

from __future__ import annotations

import warnings

import numpy as np
import pytest
from _zv_napari import layer_colours
from _zv_viewer import dock, opened_3d, settle

import napari_zarr_vectors as nzv
from napari_zarr_vectors.format.missing import OBJECT_UNKNOWN
from napari_zarr_vectors.napari.browse.targets import OBJECTS_UNKNOWN, objects_unknown
from napari_zarr_vectors.napari.colour.defaults import categorical_rgba
from napari_zarr_vectors.napari.colour.spec import MISSING_COLOUR
from napari_zarr_vectors.napari.widgets.colour import UNKNOWN_ROW, ColourByWidget, _hex

pytestmark = pytest.mark.gui

SHARED = "mesh chunks hold several objects' vertices in one fragment"


def test_why_objects_are_unknown_is_said_of_the_store_at_hand(
    draco_meshes_store, shared_chunk_mesh_store
):
    """The Draco store's chunks are said to be Draco-encoded, the raw store's raw: no Draco
    wording for a store without Draco."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        draco = objects_unknown(nzv.open_store(draco_meshes_store[0]))
        raw = objects_unknown(nzv.open_store(shared_chunk_mesh_store[0]))
    assert draco == f"{OBJECTS_UNKNOWN}: its Draco-encoded {SHARED}"
    assert raw == f"{OBJECTS_UNKNOWN}: its raw (not Draco-encoded) {SHARED}"


def _grey_rows(colours: np.ndarray, unknown: np.ndarray) -> None:
    """The vertices of unknown object, and only those, in the missing grey."""
    assert unknown.any() and not unknown.all()
    np.testing.assert_allclose(colours[unknown], np.tile(MISSING_COLOUR, (unknown.sum(), 1)))
    assert not np.isclose(colours[~unknown], MISSING_COLOUR).all(axis=1).any()


@pytest.mark.parametrize("ndisplay", [2, 3])
def test_vertices_of_unknown_object_are_drawn_in_the_legends_grey(
    make_napari_viewer, qtbot, shared_chunk_mesh_store, ndisplay
):
    """By default (object id) the two objects' own vertices get their colours and the
    shared chunk's the grey the legend's "object unknown" swatch shows; Colour by the
    object's number (``volume``), text (``kind``) and id draws them grey too, and each
    legend says so. The canvas shows that grey (2-D: no shading)."""
    path, _, owner, attributes = shared_chunk_mesh_store
    viewer = make_napari_viewer(show=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # (the read says which vertices are of no object)
        target, mesh = opened_3d(viewer, qtbot, path, "Surface")
    viewer.dims.ndisplay = ndisplay
    viewer.reset_view()
    settle(qtbot, target)
    ids = mesh.features["object_id"].to_numpy()
    np.testing.assert_array_equal(ids, owner)
    unknown = ids == OBJECT_UNKNOWN
    grey = f"<span style='color:{_hex(MISSING_COLOUR)}'>■</span> object unknown"
    assert UNKNOWN_ROW.startswith(grey)

    drawn = layer_colours(mesh)
    _grey_rows(drawn, unknown)
    np.testing.assert_allclose(drawn[~unknown], categorical_rgba(ids[~unknown]), atol=0.02)
    widget = dock(viewer, ColourByWidget)
    legend = widget.legend.text()
    assert legend.startswith("<b>object id</b> (default): each of the 2 meshes loaded")
    assert legend.endswith(f"<br>{UNKNOWN_ROW}"), legend
    if ndisplay == 2:  # the grey on the canvas (flat: no shading)
        shot = viewer.screenshot(canvas_only=True, flash=False)[..., :3].astype(int)
        assert (np.abs(shot - 128).max(axis=-1) <= 2).sum() > 100

    volume = attributes["volume"]
    spec = widget.colour_by("volume")
    assert not spec.categorical
    drawn = layer_colours(mesh)
    _grey_rows(drawn, unknown)
    lo, hi = spec.contrast_limits
    assert (lo, hi) == (pytest.approx(volume.min()), pytest.approx(volume.max()))
    by_owner = (volume[ids[~unknown]] - lo) / (hi - lo)
    np.testing.assert_allclose(drawn[~unknown], mesh.colormap.map(by_owner), atol=1e-6)
    assert widget.legend.text() == f"<b>volume</b>: viridis (lifted), 2.5 … 7<br>{UNKNOWN_ROW}"

    for feature in ("kind", "object_id"):
        spec = widget.colour_by(feature)
        assert spec.categorical, feature
        drawn = layer_colours(mesh)
        _grey_rows(drawn, unknown)
        own = dict(zip(spec.categories, spec.colours, strict=True))
        values = mesh.features[feature].to_numpy()[~unknown]
        np.testing.assert_allclose(drawn[~unknown], [own[v] for v in values.tolist()], atol=0.02)
        legend = widget.legend.text()
        assert legend.endswith(f"<br>{UNKNOWN_ROW}"), legend
        for label, rgba in zip(spec.categories, spec.colours, strict=True):
            assert f"<span style='color:{_hex(rgba)}'>■</span> {label} " in legend, legend
