"""Colour specs (``napari/colour/spec.py``): categories that loaded rows bring later."""

from __future__ import annotations

import numpy as np

from napari_zarr_vectors.napari.colour.spec import categorical_colours, palette


def test_new_values_join_the_categories_and_old_ones_keep_their_colours():
    spec = categorical_colours(np.array(["slab", "root"], object), "node_type")
    wider = spec.with_values(np.array(["end", "slab", None, "branch"], object))
    assert wider.categories == ("root", "slab", "branch", "end")
    assert wider.colours[:2] == spec.colours
    want = palette(4)
    np.testing.assert_allclose(np.asarray(wider.colours), want, rtol=0, atol=1e-7)
    assert wider.legend() == [
        ("root", wider.colours[0], 0),
        ("slab", wider.colours[1], 0),
        ("branch", wider.colours[2], 0),
        ("end", wider.colours[3], 0),
    ]


def test_values_already_categories_leave_the_spec_as_it_is():
    spec = categorical_colours(np.array([3, 1, 2]), "code")
    assert spec.with_values(np.array([1, 1, 3])) is spec
    empty = categorical_colours(np.empty(0, object), "node_type")
    assert empty.categories == ()
    assert empty.with_values(np.array(["a"], object)).categories == ("a",)
