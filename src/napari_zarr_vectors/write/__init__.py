"""Writing Zarr Vectors stores (napari-free).

Needs the ``write`` extra (``pip install "napari-zarr-vectors[write]"``): the reference
writer ``zarr-vectors`` does the writing. Reading never needs it.

* :class:`WriteSpec` -- one geometry in store order and units; :func:`spec_from_geometry`
  builds one from a core read.
* :func:`write_store` -- write a spec as a new store (pyramid by default, refusals, atomic).
* :func:`export_objects` -- copy objects of an opened store, whole and at full resolution,
  into a new store (:func:`export_spec`: the spec of such a read). Saving a napari layer
  opened from a store goes through it too.
"""

from __future__ import annotations

from .engine import (
    WRITE_EXTRA,
    MissingWriterError,
    PyramidPlan,
    SameStoreError,
    TargetExistsError,
    WriteError,
    check_target,
    choose_cells,
    choose_pyramid,
    choose_subcells,
    require_writer,
    write_store,
)
from .export import export_objects, export_spec
from .spec import SOURCE_OBJECT_ID, WriteSpec, spec_from_geometry

__all__ = [
    "SOURCE_OBJECT_ID",
    "WRITE_EXTRA",
    "MissingWriterError",
    "PyramidPlan",
    "SameStoreError",
    "TargetExistsError",
    "WriteError",
    "WriteSpec",
    "check_target",
    "choose_cells",
    "choose_pyramid",
    "choose_subcells",
    "export_objects",
    "export_spec",
    "require_writer",
    "spec_from_geometry",
    "write_store",
]
