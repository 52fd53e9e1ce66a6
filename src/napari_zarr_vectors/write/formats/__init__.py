"""Export to the files the field uses, picked by the target's suffix (napari-free).

======================  ==================================  =====================
suffix                  geometry                            written with
======================  ==================================  =====================
``.trk`` ``.tck``       lines, polylines, streamlines       nibabel
``.trx``                lines, polylines, streamlines       trx-python
``.swc``                skeletons                           pandas (navis' layout)
``.ply`` ``.obj``       meshes                              trimesh
``.stl``
``.csv``                every type: one row per vertex      pandas
======================  ==================================  =====================

Every writer takes the :class:`~..spec.WriteSpec` of :func:`..export.export_spec` (whole
objects at full resolution, placed in the world the store's ``crs`` gives) and writes one
file, atomically (a hidden temporary file beside the target, renamed when complete). The
libraries are the ``export`` extra (``pip install "napari-zarr-vectors[export]"``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...format.geometry import PATH_TYPES, GeometryType
from ..engine import WriteError

#: how to get the libraries the file formats are written with
EXPORT_EXTRA = 'pip install "napari-zarr-vectors[export]"'


@dataclass(frozen=True)
class FileFormat:
    """One file format: its suffix, the geometry types it holds, its writer
    ``write(spec, path, store, **options)`` (imported when used) and its name."""

    suffix: str
    geometry_types: tuple[str, ...]
    module: str
    function: str
    name: str

    def writer(self) -> Callable[..., None]:
        import importlib

        module = importlib.import_module(f"{__name__}.{self.module}")
        write: Callable[..., None] = getattr(module, self.function)
        return write


_G = GeometryType
_ALL = tuple(t.value for t in GeometryType)
FILE_FORMATS: dict[str, FileFormat] = {
    f.suffix: f
    for f in (
        FileFormat(".trk", PATH_TYPES, "streamlines", "write_trk", "TrackVis"),
        FileFormat(".tck", PATH_TYPES, "streamlines", "write_tck", "MRtrix tracks"),
        FileFormat(".trx", PATH_TYPES, "streamlines", "write_trx", "TRX"),
        FileFormat(".swc", (_G.SKELETON.value,), "skeleton", "write_swc", "SWC"),
        FileFormat(".ply", (_G.MESH.value,), "mesh", "write_mesh", "PLY"),
        FileFormat(".obj", (_G.MESH.value,), "mesh", "write_mesh", "Wavefront OBJ"),
        FileFormat(".stl", (_G.MESH.value,), "mesh", "write_mesh", "STL"),
        FileFormat(".csv", _ALL, "table", "write_csv", "CSV"),
    )
}


def file_format(target: str | os.PathLike[str]) -> FileFormat | None:
    """The file format the target's suffix names (case-insensitive), ``None`` for any
    other target (a Zarr Vectors store)."""
    return FILE_FORMATS.get(Path(os.fspath(target)).suffix.lower())


def formats_for(geometry_type: str) -> list[str]:
    """The suffixes a geometry type can be exported to."""
    return [s for s, f in FILE_FORMATS.items() if geometry_type in f.geometry_types]


def check_format(fmt: FileFormat, geometry_type: str, store: str) -> None:
    """Refuse a format that cannot hold the geometry, naming those that can."""
    if geometry_type not in fmt.geometry_types:
        fits = ", ".join(formats_for(geometry_type)) or "none"
        raise WriteError(
            f"{store} holds {geometry_type} objects, which a {fmt.suffix} ({fmt.name}) file "
            f"cannot hold; export them as .zarrvectors or {fits}"
        )


def write_file(fmt: FileFormat, spec: Any, path: Path, store: Any, **options: Any) -> Path:
    """Write ``spec`` to ``path`` in ``fmt``, atomically: into a hidden file beside it,
    renamed to ``path`` once complete (removed when the write fails)."""
    part = path.with_name(f".{path.stem}.partial-{os.getpid()}{path.suffix}")
    try:
        fmt.writer()(spec, part, store, **options)
        if path.exists():  # appeared while writing: never overwritten
            raise WriteError(f"{path} appeared while it was written; the export is discarded")
        os.replace(part, path)
    finally:
        part.unlink(missing_ok=True)
    return path


def missing(package: str) -> MissingExportLibraryError:
    """The error to raise when ``package`` cannot be imported (``raise missing(...) from``)."""
    return MissingExportLibraryError(
        f"this export needs {package}, which is not installed: {EXPORT_EXTRA}"
    )


class MissingExportLibraryError(WriteError, ImportError):
    """The library a file format is written with is not installed (the ``export`` extra)."""
