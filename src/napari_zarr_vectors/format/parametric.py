"""Resolution-independent (parametric) objects of the root ``parametric/`` group (FORMAT07 §5.12)."""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from .codecs import decode_blob
from .decode.arrays import parse_dtype
from .decode.groups import decode_csr_groups
from .errors import ZVChunkWarning, ZVFormatError
from .io import StoreIO
from .layout.base import decoded_chunk_shape
from .validate import (
    Source,
    as_mapping,
    check_whole_read,
    check_zarr_array_doc,
    int_field,
    int_list,
    mapping_field,
    str_field,
)


@dataclass(frozen=True)
class ParametricObject:
    """One parametric object, e.g. a plane ``A..D`` or a sphere ``cx, cy, cz, r``."""

    type: str
    type_id: int
    coefficients: dict[str, float]
    name: str
    attributes: dict[str, object] = field(default_factory=dict)


@dataclass(frozen=True)
class Parametric:
    """Everything under ``parametric/``: objects, their groups and group attributes."""

    objects: list[ParametricObject] = field(default_factory=list)
    groups: dict[int, np.ndarray] = field(default_factory=dict)
    group_attributes: dict[str, np.ndarray] = field(default_factory=dict)


def _is_array(io: StoreIO, path: str) -> bool:
    """Whether ``path`` is a Zarr array (the 0.9 layout) rather than a group holding a
    0.7 ``data`` blob."""
    doc = io.get_json(f"{path}/zarr.json")
    return isinstance(doc, dict) and doc.get("node_type") == "array"


def _array(io: StoreIO, path: str) -> np.ndarray | None:
    """The whole contents of the 0.9 Zarr array at ``path`` (``None`` when absent); its
    size is checked before zarr reads it, vlen-bytes items come back as ``bytes``."""
    from zarr.core.array import AsyncArray
    from zarr.core.sync import sync
    from zarr.storage import StorePath

    doc = io.get_json(f"{path}/zarr.json")
    if doc is None:
        return None
    src = Source(io.name, f"{path}/zarr.json", None, path)
    check_zarr_array_doc(doc, src)
    try:
        # (zarr's stubs want its TypedDict; check_zarr_array_doc checked the doc)
        arr = AsyncArray(metadata=doc, store_path=StorePath(io.store, path))  # type: ignore[call-overload]
        check_whole_read(arr.shape, arr.dtype.itemsize or 8, src, decoded_chunk_shape(arr))
        return np.asarray(sync(arr.getitem(tuple(slice(None) for _ in arr.shape))))
    except ZVFormatError:
        raise
    except Exception as exc:  # noqa: BLE001 - zarr raises many types for bad bytes
        raise ZVFormatError(
            f"cannot read the array: {type(exc).__name__}: {exc}", store=io.name, array=path
        ) from None


def _read_v09(io: StoreIO, types: dict[str, Any], rsrc: Source) -> Parametric:
    """``parametric/`` in the 0.9 layout (zarr-vectors >= 0.8.1, FORMAT-NEXT §9.2): plain
    Zarr arrays ``objects`` (float64 ``(n, max_row_length)``), ``names`` and ``groups``
    (1-D vlen bytes), ``object_attributes/<n>`` and ``group_attributes/<n>``."""
    rows = _array(io, "parametric/objects")
    if rows is None:
        return Parametric()
    if rows.ndim != 2 or rows.shape[1] < 1 or rows.dtype.kind != "f":
        raise ZVFormatError(
            f"parametric objects array {rows.dtype} {list(rows.shape)} is not (n, width) floats",
            store=io.name,
            array="parametric/objects",
        )
    raw_names = _listed_array(io, "parametric/names")
    names = [] if raw_names is None else [_text(v) for v in raw_names.reshape(-1).tolist()]
    attrs = {
        name: values
        for name in io.list_dir("parametric/object_attributes")
        if name != "zarr.json"
        and (values := _listed_array(io, f"parametric/object_attributes/{name}")) is not None
    }
    groups: dict[int, np.ndarray] = {}
    members = _listed_array(io, "parametric/groups")
    if members is not None:
        for g, raw in enumerate(members.reshape(-1).tolist()):
            raw = raw if isinstance(raw, bytes) else b""
            if len(raw) % 8:
                raise ZVFormatError(
                    f"parametric group {g} holds {len(raw)} bytes, not whole int64 ids",
                    store=io.name,
                    array="parametric/groups",
                )
            groups[g] = np.frombuffer(raw, "<i8").astype(np.int64)
    group_attrs = {
        name: values
        for name in io.list_dir("parametric/group_attributes")
        if name != "zarr.json"
        and (values := _listed_array(io, f"parametric/group_attributes/{name}")) is not None
    }
    doc = io.get_json("parametric/objects/zarr.json")
    assert doc is not None  # (the objects array was read from it)
    rows_per_chunk = int(doc["chunk_grid"]["configuration"]["chunk_shape"][0])
    objects = _objects(io, rows, names, attrs, types, rsrc, lambda i: f"{i // rows_per_chunk}.0")
    return Parametric(objects, groups, group_attrs)


def _listed_array(io: StoreIO, path: str) -> np.ndarray | None:
    """:func:`_array`, warning (:class:`ZVChunkWarning`) when its folder is listed but holds
    no array (its ``zarr.json`` is gone): what it held is left out."""
    values = _array(io, path)
    folder, name = path.rsplit("/", 1)
    if values is None and name in io.list_dir(folder):
        error = ZVFormatError("the folder is listed but holds no array", store=io.name, array=path)
        warnings.warn(f"left out: {error}", ZVChunkWarning, stacklevel=3)
    return values


def _text(value: object) -> str:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return "" if value is None else str(value)


def _blob(io: StoreIO, prefix: str) -> bytes | None:
    meta_raw, data_raw = io.get_many([f"{prefix}/zarr.json", f"{prefix}/c/0"])
    if meta_raw is None:
        return None
    meta = io.parse_json(meta_raw, f"{prefix}/zarr.json")
    try:
        return decode_blob(meta, data_raw, Source(io.name, f"{prefix}/zarr.json"))
    except ZVFormatError as exc:
        raise exc.located(store=io.name, array=prefix) from None


def _attrs(io: StoreIO, prefix: str) -> dict[str, Any]:
    doc = io.get_json(f"{prefix}/zarr.json") or {}
    return as_mapping(doc.get("attributes"), "attributes", Source(io.name, f"{prefix}/zarr.json"))


def _arrays(io: StoreIO, folder: str) -> dict[str, np.ndarray]:
    """``{name: values}`` of ``folder/<name>/data`` blobs shaped by their ``dtype``/``shape``."""
    out: dict[str, np.ndarray] = {}
    for name in io.list_dir(folder):
        if name == "zarr.json":
            continue
        meta = _attrs(io, f"{folder}/{name}")
        raw = _blob(io, f"{folder}/{name}/data")
        if raw is None:
            continue
        src = Source(io.name, f"{folder}/{name}/zarr.json")
        dtype = parse_dtype(str_field(meta, "dtype", src, "float64"))
        if len(raw) % dtype.itemsize:
            raise ZVFormatError(f"{folder}/{name} is not whole {dtype} values", store=io.name)
        values = np.frombuffer(raw, dtype)
        shape = meta.get("shape")
        if shape is not None:
            shape = int_list(shape, "shape", src)
        if shape and int(np.prod(shape, dtype=object)) == values.size:
            values = values.reshape(shape)
        out[name] = values
    return out


def _type_coefficients(spec: dict[str, Any], tid: int, rsrc: Source) -> list[str]:
    """The coefficient names of a declared parametric type, which names itself and its
    coefficients with strings."""
    field = f"parametric_types.{tid}"
    if not isinstance(spec.get("name"), str):
        raise rsrc.error(f"{field}.name", "is missing or not a string")
    coeff_names = spec.get("coefficients")
    if not isinstance(coeff_names, list) or not all(isinstance(c, str) for c in coeff_names):
        raise rsrc.error(f"{field}.coefficients", "is missing or not a list of names")
    return coeff_names


def _objects(
    io: StoreIO,
    rows: np.ndarray,
    names: list[str],
    attrs: dict[str, np.ndarray],
    types: dict[str, Any],
    rsrc: Source,
    chunk_of_row: Callable[[int], str],
) -> list[ParametricObject]:
    """One :class:`ParametricObject` per row ``[type_id, coefficients...]`` (NaN-padded);
    ``chunk_of_row`` names the chunk that holds a row."""
    n, width = rows.shape
    if n and not (np.all(np.isfinite(rows[:, 0])) and np.all(np.abs(rows[:, 0]) < 2**53)):
        raise ZVFormatError(
            "parametric object type ids are not finite integers",
            store=io.name,
            array="parametric/objects",
        )
    objects = []
    padded = []
    undeclared = []
    for i, row in enumerate(rows):
        tid = int(row[0])
        spec = as_mapping(types.get(str(tid)), f"parametric_types.{tid}", rsrc)
        if not spec:  # a type the root does not declare: what its coefficients mean is unknown
            undeclared.append(i)
            continue
        coeff_names = _type_coefficients(spec, tid, rsrc) or [f"c{j}" for j in range(width - 1)]
        if len(coeff_names) > width - 1 or not np.all(np.isnan(row[1 + len(coeff_names) :])):
            # a row is NaN-padded past its type's coefficients: one that is not (e.g. a
            # missing chunk read as the fill value 0) is not an object of that type
            padded.append(i)
            continue
        coeffs = {
            c: float(v) for c, v in zip(coeff_names, row[1:], strict=False) if not np.isnan(v)
        }
        name = names[i] if i < len(names) and names[i] else f"{spec['name']}_{i}"
        objects.append(
            ParametricObject(
                spec["name"],
                tid,
                coeffs,
                name,
                {k: v[i] for k, v in attrs.items() if i < len(v)},
            )
        )
    for left, why in (
        (padded, "are not [type id, its coefficients] NaN-padded to the row width"),
        (
            undeclared,
            "have a type id that parametric/zarr.json's parametric_types does not declare",
        ),
    ):
        if left:
            error = ZVFormatError(
                f"{len(left)} rows (first {left[0]}) {why}",
                store=io.name,
                array="parametric/objects",
                chunk=chunk_of_row(left[0]),
            )
            warnings.warn(f"left out: {error}", ZVChunkWarning, stacklevel=3)
    return objects


def read_parametric(io: StoreIO) -> Parametric:
    """The store's parametric objects (empty when there is no ``parametric/`` group)."""
    root = io.get_json("parametric/zarr.json")
    if root is None:
        if io.list_dir_known("parametric"):  # its folder holds data, its document is gone
            error = ZVFormatError(
                "the parametric folder holds data but no zarr.json",
                store=io.name,
                array="parametric",
            )
            warnings.warn(f"parametric objects left out: {error}", ZVChunkWarning, stacklevel=2)
        return Parametric()
    rsrc = Source(io.name, "parametric/zarr.json")
    types = mapping_field(_attrs(io, "parametric"), "parametric_types", rsrc)
    if _is_array(io, "parametric/objects"):
        return _read_v09(io, types, rsrc)
    meta = _attrs(io, "parametric/objects")
    raw = _blob(io, "parametric/objects/data")
    if raw is None:
        return Parametric()
    osrc = Source(io.name, "parametric/objects/zarr.json")
    n = int_field(meta, "num_objects", osrc, 0)
    width = int_field(meta, "max_row_length", osrc, 0)
    if n < 0 or width < 1 or len(raw) != 8 * n * width:
        raise ZVFormatError(
            "parametric objects blob does not hold num_objects x max_row_length float64",
            store=io.name,
            array="parametric/objects",
        )
    rows = np.frombuffer(raw, "<f8").reshape(n, width)
    names_raw = _blob(io, "parametric/names/data")
    names = names_raw.decode("utf-8", errors="replace").split("\n") if names_raw else []
    attrs = _arrays(io, "parametric/object_attributes")
    objects = _objects(io, rows, names, attrs, types, rsrc, lambda i: "0")
    groups: dict[int, np.ndarray] = {}
    gmeta = io.get_json("parametric/groups/zarr.json")
    if gmeta is not None:
        gsrc = Source(io.name, "parametric/groups/zarr.json")
        n_groups = int_field(_attrs(io, "parametric/groups"), "num_groups", gsrc, 0)
        data = _blob(io, "parametric/groups/data") or b""
        offsets = _blob(io, "parametric/groups/offsets") or b""
        try:
            groups = decode_csr_groups(data, offsets, n_groups)
        except ZVFormatError as exc:
            raise exc.located(store=io.name, array="parametric/groups") from None
    return Parametric(objects, groups, _arrays(io, "parametric/group_attributes"))
