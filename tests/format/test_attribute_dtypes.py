"""Every attribute dtype the writers produce is read: text, booleans and
multi-channel values, in the 0.9 layout (written here by zarr-vectors 0.9.2) and the 0.7
layout (a 0.7 fixture whose attribute bytes are rewritten); an attribute that cannot be read
(``object``: the writer stored memory addresses) is left out with a warning naming it, its
array and level, and the rest of the store reads."""

from __future__ import annotations

import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pytest
import zarr
from _truth import DATA_DIR

import napari_zarr_vectors as nzv
from writer_dtypes import KINDS, WORDS, object_truth, schema, vertex_truth, write_store

zv = pytest.importorskip("zarr_vectors")


def _rows_of(read_positions: np.ndarray, truth_positions: np.ndarray) -> np.ndarray:
    """Index into the truth of each read vertex (positions are distinct float32)."""
    index = {tuple(p): i for i, p in enumerate(np.asarray(truth_positions, np.float32).tolist())}
    return np.array([index[tuple(p)] for p in np.asarray(read_positions, np.float32).tolist()])


@pytest.mark.parametrize("kind", KINDS)
def test_text_bool_and_multichannel_attributes_read_back(tmp_path: Path, kind: str) -> None:
    path = tmp_path / f"{kind}.zarrvectors"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        positions, _ = write_store(kind, path, np.random.default_rng(1))
    store = nzv.open_store(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", nzv.ZVAttributeWarning)
        geom = store.read(0)
    rows = _rows_of(geom.positions, positions)
    assert len(rows) == len(positions)
    truth = vertex_truth(len(positions))
    attrs = geom.vertex_attributes
    assert attrs["word"].tolist() == truth["word"][rows].tolist()
    assert attrs["flag"].dtype == bool
    np.testing.assert_array_equal(attrs["flag"], truth["flag"][rows])
    np.testing.assert_array_equal(attrs["rgb"], truth["rgb"][rows])
    assert attrs["rgb"].dtype == np.uint8
    np.testing.assert_array_equal(attrs["xyz"], truth["xyz"][rows])

    objects = store.object_attributes(0)
    ids = np.asarray(store.object_ids(0))
    otruth = object_truth(len(ids))
    assert objects["side"][ids].tolist() == otruth["side"].tolist()
    np.testing.assert_array_equal(objects["box"][ids], otruth["box"])


def test_an_object_attribute_is_left_out_with_a_warning_naming_it(tmp_path: Path) -> None:
    """zarr-vectors 0.9.2 stores an ``object`` array's pointers: the attribute is left out,
    once per store, and the other attribute and the geometry read."""
    path = tmp_path / "graph.zarrvectors"
    pos = (np.random.default_rng(2).random((20, 3)) * 100).astype(np.float32)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = zv.create(str(path), schema=schema("graph"))
        ds.add_graph(
            pos,
            np.array([[i, i - 1] for i in range(1, 20)]),
            attributes={"label": WORDS[np.arange(20) % 3].astype(object), "w": np.arange(20.0)},
        )
    store = nzv.open_store(path)
    with pytest.warns(nzv.ZVAttributeWarning) as caught:
        geom = store.read(0)
    (message,) = [str(w.message) for w in caught if w.category is nzv.ZVAttributeWarning]
    assert "vertex attribute 'label' left out" in message
    assert "array vertex_attributes/label" in message and "level 0" in message
    assert str(path) in message and "memory addresses" in message
    assert set(geom.vertex_attributes) == {"w"}
    np.testing.assert_array_equal(
        geom.vertex_attributes["w"], _rows_of(geom.positions, pos).astype(float)
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error", nzv.ZVAttributeWarning)
        store.read(0)  # once per store


def test_edge_attributes_of_text_and_bool_read_and_an_object_one_is_left_out(
    tmp_path: Path,
) -> None:
    path = tmp_path / "graph.zarrvectors"
    n = 30
    pos = (np.random.default_rng(3).random((n, 3)) * 100).astype(np.float32)
    edges = np.array([[i, i - 1] for i in range(1, n)])
    words = WORDS[np.arange(n - 1) % 3]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ds = zv.create(str(path), schema=schema("graph"))
        ds.add_graph(
            pos,
            edges,
            edge_attributes={
                "kind": words,
                "lost": words.astype(object),
                "even": np.arange(n - 1) % 2 == 0,
                "k": np.arange(n - 1, dtype=np.float32),
            },
        )
    store = nzv.open_store(path)
    with pytest.warns(nzv.ZVAttributeWarning, match=r"edge attribute 'lost' left out.*links?"):
        geom = store.read(0)
    attrs = geom.edge_attributes
    assert set(attrs) == {"kind", "even", "k"}
    k = attrs["k"].astype(np.int64)  # the writer's edge index of each edge read
    assert len(k) == n - 1 and sorted(k.tolist()) == list(range(n - 1))
    assert attrs["kind"].tolist() == words[k].tolist()
    assert attrs["even"].dtype == bool
    np.testing.assert_array_equal(attrs["even"], k % 2 == 0)


# --------------------------------------------------------------------------------------------
# the 0.7 layout: a twin fixture whose attribute bytes are rewritten as text
# --------------------------------------------------------------------------------------------


def _rewrite_blob(array_dir: Path, payload: bytes) -> None:
    """Replace the one-chunk ``uint8`` array at ``array_dir`` (a 0.7 chunk blob)."""
    shutil.rmtree(array_dir)
    arr = zarr.create_array(
        str(array_dir), shape=(len(payload),), chunks=(max(len(payload), 1),), dtype="uint8"
    )
    arr[:] = np.frombuffer(payload, np.uint8)


def _set_dtype(group_dir: Path, dtype: str) -> None:
    doc = json.loads((group_dir / "zarr.json").read_text())
    doc["attributes"]["dtype"] = dtype
    (group_dir / "zarr.json").write_text(json.dumps(doc))


def test_v07_text_vertex_and_object_attributes(tmp_path: Path) -> None:
    src = DATA_DIR / "v09" / "v07-twins" / "polylines.zarrvectors"
    store_path = tmp_path / "polylines.zarrvectors"
    shutil.copytree(src, store_path)
    before = nzv.open_store(src)
    geom0 = before.read(0)
    label0 = before.object_attributes(0)["label"]
    # object attribute 'label' (int32) -> its decimal text as <U4
    label_text = np.array([f"L{v}" for v in label0.tolist()], dtype="<U4")
    group = store_path / "0" / "object_attributes" / "label"
    _rewrite_blob(group / "data", label_text.tobytes())
    _set_dtype(group, "<U4")
    # a vertex attribute: every chunk's rows as <U3 text ("a", "bb", "ccc" by row in chunk)
    vdir = store_path / "0" / "vertex_attributes"
    name = "intensity"
    for chunk in (p for p in (vdir / name).iterdir() if p.is_dir()):
        n = (
            json.loads((store_path / "0" / "vertices" / chunk.name / "zarr.json").read_text())[
                "shape"
            ][0]
            // 12
        )
        _rewrite_blob(chunk, WORDS[np.arange(n) % 3].astype("<U3").tobytes())
    _set_dtype(vdir / name, "<U3")
    # object attribute 'length': declared 'object' (what an object array would say)
    _set_dtype(store_path / "0" / "object_attributes" / "length", "object")
    # group attribute 'weight' -> text
    weight0 = before.group_attributes(0)["weight"]
    weight_text = np.array([f"w{i}" for i in range(len(weight0))], dtype="<U3")
    _rewrite_blob(store_path / "0" / "group_attributes" / "weight" / "data", weight_text.tobytes())
    _set_dtype(store_path / "0" / "group_attributes" / "weight", "<U3")

    store = nzv.open_store(store_path)
    with pytest.warns(nzv.ZVAttributeWarning, match=r"object attribute 'length' left out"):
        objects = store.object_attributes(0)
    assert objects["label"].tolist() == label_text.tolist()
    assert "length" not in objects
    assert store.group_attributes(0)["weight"].tolist() == weight_text.tolist()
    geom = store.read(0)
    np.testing.assert_array_equal(geom.positions, geom0.positions)
    per_chunk = [WORDS[np.arange(len(c.positions)) % 3] for c in _chunks(store)]
    assert geom.vertex_attributes[name].tolist() == np.concatenate(per_chunk).tolist()


def _chunks(store):
    """Decoded chunks of level 0 in level order (to know each chunk's row count)."""
    from napari_zarr_vectors.format.loading import load_chunks

    return load_chunks(store.layout, 0, store.chunks(0), [])


# --------------------------------------------------------------------------------------------
# real data: navis' neurons
# --------------------------------------------------------------------------------------------


def _per_object(store, geom) -> dict[int, np.ndarray]:
    ids = np.asarray(geom.vertex_object_ids)
    return {int(k): np.flatnonzero(ids == k) for k in np.unique(ids)}


def test_neurons_with_an_object_node_type_open_without_it(neurons_store) -> None:
    path, truth = neurons_store
    store = nzv.open_store(path)
    with pytest.warns(nzv.ZVAttributeWarning, match=r"'node_type' left out.*memory addresses"):
        geom = store.read(0)
    assert "node_type" not in geom.vertex_attributes
    assert geom.vertex_count == truth.vertex_count
    rows = _per_object(store, geom)
    for k, nodes in enumerate(truth.objects):
        got = geom.positions[rows[k]]
        np.testing.assert_array_equal(np.unique(got, axis=0), np.unique(nodes, axis=0))
    body = store.object_attributes(0)["body_id"]
    np.testing.assert_array_equal(body[: len(truth.objects)], truth.object_attributes["body_id"])


def test_neurons_node_type_stored_as_text_reads_back(neurons_text_store) -> None:
    path, truth = neurons_text_store
    store = nzv.open_store(path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", nzv.ZVAttributeWarning)
        geom = store.read(0)
    node_type = geom.vertex_attributes["node_type"]
    rows = _per_object(store, geom)
    for k, (nodes, types) in enumerate(
        zip(truth.objects, truth.vertex_attributes["node_type"], strict=True)
    ):
        got = sorted(
            zip(
                map(tuple, geom.positions[rows[k]].tolist()),
                node_type[rows[k]].tolist(),
                strict=True,
            )
        )
        want = sorted(zip(map(tuple, nodes.tolist()), types.astype(str).tolist(), strict=True))
        assert got == want
    assert set(node_type.tolist()) == {"root", "slab", "branch", "end"}
