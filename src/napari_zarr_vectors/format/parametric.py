"""Resolution-independent (parametric) objects of the root ``parametric/`` group (FORMAT07 §5.12)."""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .codecs import decode_bytes_chunk
from .errors import ZVFormatError
from .io import StoreIO


@dataclass(frozen=True)
class ParametricObject:
    """One parametric object, e.g. a plane ``A..D`` or a sphere ``cx, cy, cz, r``."""

    type: str
    type_id: int
    coefficients: dict[str, float]
    name: str
    attributes: dict[str, object] = field(default_factory=dict)


def _blob(io: StoreIO, prefix: str) -> bytes | None:
    meta_raw, data_raw = io.get_many([f"{prefix}/zarr.json", f"{prefix}/c/0"])
    if meta_raw is None:
        return None
    meta = io.parse_json(meta_raw, f"{prefix}/zarr.json")
    n = int((meta.get("shape") or [0])[0])
    if data_raw is None:
        return bytes(n)
    payload = decode_bytes_chunk(data_raw, meta.get("codecs") or [{"name": "bytes"}], n)
    if len(payload) != n:
        raise ZVFormatError(
            f"{prefix} decodes to {len(payload)} bytes, its shape says {n}", store=io.name
        )
    return payload


def read_parametric(io: StoreIO) -> list[ParametricObject]:
    """Every parametric object of the store (empty when there is no ``parametric/`` group)."""
    root = io.get_json("parametric/zarr.json")
    if root is None:
        return []
    types = (root.get("attributes") or {}).get("parametric_types") or {}
    meta = (io.get_json("parametric/objects/zarr.json") or {}).get("attributes") or {}
    raw = _blob(io, "parametric/objects/data")
    if raw is None:
        return []
    n, width = int(meta.get("num_objects", 0)), int(meta.get("max_row_length", 0))
    if len(raw) != 8 * n * width:
        raise ZVFormatError(
            "parametric objects blob does not hold num_objects x max_row_length float64",
            store=io.name,
            array="parametric/objects",
        )
    rows = np.frombuffer(raw, "<f8").reshape(n, width)
    names_raw = _blob(io, "parametric/names/data")
    names = names_raw.decode("utf-8").split("\n") if names_raw else []
    attrs: dict[str, np.ndarray] = {}
    for attr in io.list_dir("parametric/object_attributes"):
        if attr == "zarr.json":
            continue
        ameta = (io.get_json(f"parametric/object_attributes/{attr}/zarr.json") or {}).get(
            "attributes"
        ) or {}
        data = _blob(io, f"parametric/object_attributes/{attr}/data")
        if data is not None:
            values = np.frombuffer(data, np.dtype(ameta.get("dtype", "float64")).newbyteorder("<"))
            shape = ameta.get("shape")
            attrs[attr] = values.reshape(shape) if shape else values
    out = []
    for i, row in enumerate(rows):
        tid = int(row[0])
        spec = types.get(str(tid), {})
        coeff_names = spec.get("coefficients") or [f"c{j}" for j in range(width - 1)]
        coeffs = {
            c: float(v) for c, v in zip(coeff_names, row[1:], strict=False) if not np.isnan(v)
        }
        name = names[i] if i < len(names) and names[i] else f"{spec.get('name', 'object')}_{i}"
        out.append(
            ParametricObject(
                str(spec.get("name", tid)),
                tid,
                coeffs,
                name,
                {k: v[i] for k, v in attrs.items() if i < len(v)},
            )
        )
    return out
