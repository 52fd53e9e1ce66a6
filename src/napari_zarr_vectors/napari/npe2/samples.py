"""File ▸ Open Sample: small stores shipped with the package, opened through the reader.

The stores ship as ``sample_data/<name>.zarrvectors.tar.gz`` (see ``sample_data/README.md``);
each is unpacked once into the user cache directory, keyed by the archive's hash, and the
folder is opened with :func:`~napari_zarr_vectors.napari.npe2.reader.read_zarr_vectors`.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tarfile
import tempfile
from importlib import resources
from pathlib import Path

from napari_zarr_vectors.napari.npe2.reader import ReadLayers, read_zarr_vectors

#: Sample name -> geometry type of the store in ``sample_data/<name>.zarrvectors.tar.gz``.
SAMPLES = {
    "points": "point_cloud",
    "lines": "line",
    "polylines": "polyline",
    "streamlines": "streamline",
    "graph": "graph",
    "skeleton": "skeleton",
    "mesh": "mesh",
}


def sample_store_path(name: str, cache_dir: str | os.PathLike | None = None) -> Path:
    """Path of the unpacked sample store ``name`` (unpacking it on first use)."""
    if name not in SAMPLES:
        raise KeyError(f"unknown sample {name!r}; one of {sorted(SAMPLES)}")
    archive = resources.files("napari_zarr_vectors").joinpath(
        f"sample_data/{name}.zarrvectors.tar.gz"
    )
    payload = archive.read_bytes()
    digest = hashlib.sha256(payload).hexdigest()[:12]
    root = Path(cache_dir) if cache_dir is not None else _cache_dir()
    target = root / f"{name}-{digest}"
    store = target / f"{name}.zarrvectors"
    if (store / "zarr.json").is_file():
        return store
    root.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{name}-", dir=root))
    try:
        with tempfile.TemporaryFile() as f:
            f.write(payload)
            f.seek(0)
            with tarfile.open(fileobj=f, mode="r:gz") as tar:
                _extract(tar, staging)
        try:
            os.replace(staging, target)
        except OSError:  # another process unpacked it first
            if not (store / "zarr.json").is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return store


def open_sample(name: str) -> ReadLayers:
    """Layer data of sample ``name``, read exactly as a dropped folder would be."""
    return read_zarr_vectors(str(sample_store_path(name)))


def points() -> ReadLayers:
    """A point cloud: 240 points in 15 objects, colour, intensity and label attributes."""
    return open_sample("points")


def lines() -> ReadLayers:
    """40 straight line segments with per-line length and kind."""
    return open_sample("lines")


def polylines() -> ReadLayers:
    """12 polylines with per-vertex radius and a 2-channel attribute."""
    return open_sample("polylines")


def streamlines() -> ReadLayers:
    """10 streamlines, coloured by direction."""
    return open_sample("streamlines")


def graph() -> ReadLayers:
    """A graph of 60 nodes and 73 edges in 3 connected objects."""
    return open_sample("graph")


def skeleton() -> ReadLayers:
    """A branching skeleton of 48 nodes with per-node radius."""
    return open_sample("skeleton")


def mesh() -> ReadLayers:
    """Two meshes (an icosphere and a cube) with per-vertex curvature."""
    return open_sample("mesh")


def _cache_dir() -> Path:
    from platformdirs import user_cache_dir

    return Path(user_cache_dir("napari-zarr-vectors")) / "samples"


def _extract(tar: tarfile.TarFile, dest: Path) -> None:
    if hasattr(tarfile, "data_filter"):
        tar.extractall(dest, filter="data")
        return
    dest_resolved = dest.resolve()
    for member in tar.getmembers():  # Python without extraction filters: check by hand
        target = (dest / member.name).resolve()
        if not (member.isfile() or member.isdir()) or dest_resolved not in target.parents:
            raise ValueError(f"unsafe member {member.name!r} in sample archive")
    tar.extractall(dest)  # noqa: S202 - members checked above
