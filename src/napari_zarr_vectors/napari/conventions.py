"""Names the plugin gives: the key of its part of a layer's ``metadata`` and the feature
columns it adds to layers (not store attributes). Shared by the layer builders
(:mod:`napari_zarr_vectors.napari.layerdata.build`), colour (:mod:`napari_zarr_vectors.napari.colour`), hover and the widgets."""

from __future__ import annotations

#: The key of the plugin's part of every layer's ``metadata``.
META = "zarr_vectors"

#: Names of the feature columns added by the adapter (not store attributes).
OBJECT_ID = "object_id"
GROUP_ID = "group_id"
GROUPS = "groups"
DIRECTION = "direction"
