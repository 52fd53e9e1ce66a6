"""A world box on the canvas (napari/lod/camera.py): its size on screen, whether the view
shows it, the zoom that fits it; checked against napari's own fit of a layer with that
extent (``ViewerModel.fit_to_view``, margin 0.05) and against the box's corners."""

from __future__ import annotations

import numpy as np
import pytest
from napari.components import ViewerModel

from napari_zarr_vectors.napari.lod.camera import fitting_zoom, screen_extent, shows_box

LO, HI = np.array([10.0, -40.0, 5.0]), np.array([30.0, 60.0, 25.0])


def viewer_with_box(ndisplay: int, angles=(0.0, 0.0, 0.0)) -> ViewerModel:
    viewer = ViewerModel()
    # a surface's extent is its vertices' box (points would add their size)
    viewer.add_surface((np.array([LO, HI, (LO + HI) / 2]), np.array([[0, 1, 2]])))
    viewer.canvas.size = (600, 400)
    viewer.dims.ndisplay = ndisplay
    viewer.scene.camera.angles = angles
    return viewer


@pytest.mark.parametrize(
    ("ndisplay", "angles"), [(2, (0.0, 0.0, 0.0)), (3, (0.0, 0.0, 0.0)), (3, (20.0, -35.0, 70.0))]
)
def test_the_fitting_zoom_is_napari_s_own_fit_and_shows_the_box_exactly(ndisplay, angles):
    viewer = viewer_with_box(ndisplay, angles)
    viewer.fit_to_view(margin=0.05)
    cam = viewer.scene.camera
    assert fitting_zoom(viewer, LO, HI, 0.05) == pytest.approx(cam.zoom, rel=1e-6)
    assert shows_box(viewer, LO, HI)
    # 10% closer cuts a side off; a canvas 10% smaller too
    cam.zoom = cam.zoom * 1.1
    assert not shows_box(viewer, LO, HI)
    cam.zoom = cam.zoom / 1.1
    assert not shows_box(viewer, LO, HI, (540, 360))
    # moved along the screen axis the box fills by a little more than the margin: its side
    # leaves the picture
    canvas = np.asarray(viewer.canvas.size, float)
    tight = int(np.argmax(screen_extent(viewer, LO, HI) * cam.zoom / canvas))
    if ndisplay == 2:
        along = np.eye(2)[tight]
    else:
        up = np.asarray(cam.up_direction)
        along = [up, np.cross(np.asarray(cam.view_direction), up)][tight]
    centre = np.asarray(cam.center, float)
    centre[-ndisplay:] += along * 0.06 * canvas[tight] / cam.zoom
    cam.center = tuple(centre)
    assert not shows_box(viewer, LO, HI)


def test_the_screen_extent_is_the_box_s_projection():
    flat = viewer_with_box(2)
    assert screen_extent(flat, LO, HI) == pytest.approx([100.0, 20.0])  # y, x sides
    side = viewer_with_box(3, (0.0, 90.0, 0.0))  # looking along x: z and y on screen
    h, w = screen_extent(side, LO, HI)
    assert sorted([h, w]) == pytest.approx([20.0, 100.0], abs=1e-6)


def test_a_box_of_no_size_has_no_fitting_zoom():
    viewer = viewer_with_box(3)
    assert fitting_zoom(viewer, LO, LO, 0.1) is None
