"""select_objects and the regions: exact against brute force on real data and fixtures."""

from __future__ import annotations

import shutil
import threading
import warnings
from pathlib import Path

import numpy as np
import pytest
from _damage import name_a_missing_fragment

import napari_zarr_vectors as nzv
from data_paths import data_root
from napari_zarr_vectors import Box, Plane, Sphere, select_objects
from napari_zarr_vectors.format import select as select_module
from napari_zarr_vectors.format.errors import ZVCancelledError, ZVError

DATA = data_root()
PATHS = ("line", "polyline", "streamline")
EDGED = (*PATHS, "graph", "skeleton")


# -- brute force: the whole level read, every vertex and segment tested ---------------------
def brute(store: nzv.Store, region, test: str, level: int = 0) -> set[int]:
    g = store.read(level)
    pos = g.positions if region.space == "store" else store.placement.apply(g.positions)
    vid = g.vertex_object_ids
    if test == "vertex" or (test == "crosses" and store.geometry_type not in EDGED):
        return set(np.unique(vid[region.contains(pos)]).tolist())
    if test == "crosses":
        hit = set(np.unique(vid[region.contains(pos)]).tolist())
        e = np.asarray(g.edges)
        seg = region.meets_segments(pos[e[:, 0]], pos[e[:, 1]])
        return hit | set(np.unique(vid[e[seg, 0]]).tolist())
    out = set()
    for rows, oid in zip(g.paths, g.path_object_ids, strict=True):
        inside = region.contains(pos[rows[[0, -1]]])
        if inside.all() or (test == "endpoints" and inside.any()):
            out.add(int(oid))
    return out


def random_regions(store: nzv.Store, n: int, seed: int, space: str = "store"):
    rng = np.random.default_rng(seed)
    lo, hi = (np.asarray(v, float) for v in store.bounds)
    if space == "world":
        lo, hi = np.sort(store.placement.apply(np.stack([lo, hi])), axis=0)
    for _ in range(n):
        centre = lo + rng.random(lo.size) * (hi - lo)
        width = (hi - lo) * rng.uniform(0.03, 0.3)
        yield Box(centre - width / 2, centre + width / 2, space=space)
        yield Sphere(centre, float(width.mean() / 2), space=space)
        yield Plane(centre, rng.normal(size=lo.size), space=space)


def predicates_of(store: nzv.Store) -> list[str]:
    extra = ["endpoints", "both_endpoints"] if store.geometry_type in PATHS else []
    return ["crosses", "vertex", *extra]


def assert_exact(store: nzv.Store, n: int, seed: int, space: str = "store") -> int:
    """Every region and test equals brute force; returns how many selections were not empty."""
    found = 0
    for region in random_regions(store, n, seed, space):
        for test in predicates_of(store):
            got = select_objects(store, include=[region], test=test)
            assert got.dtype == np.int64
            assert np.all(np.diff(got) > 0)
            assert set(got.tolist()) == brute(store, region, test), (region, test)
            found += bool(got.size)
    return found


# -- the regions' tests ---------------------------------------------------------------------
def test_segment_through_a_box_without_a_vertex_inside() -> None:
    box = Box([0, 0, 0], [1, 1, 1])
    a = np.array([[-1, 0.5, 0.5], [-1, -1, 0.5], [2, 2, 2], [0.5, 0.5, 0.5], [-1, 1, 0.5]])
    b = np.array([[2, 0.5, 0.5], [2, 2.0, 0.5], [3, 3, 3], [0.5, 0.5, 0.5], [1, -1.01, 0.5]])
    assert box.meets_segments(a, b).tolist() == [True, True, False, True, False]
    assert box.contains(a).tolist() == [False, False, False, True, False]


def test_sphere_and_plane_segments() -> None:
    ball = Sphere([0, 0, 0], 1.0)
    a = np.array([[-2, 0.5, 0], [-2, 1.0, 0], [-2, 1.5, 0], [3, 0, 0]])
    b = np.array([[2, 0.5, 0], [2, 1.0, 0], [2, 1.5, 0], [2, 0, 0]])
    assert ball.meets_segments(a, b).tolist() == [True, True, False, False]
    plane = Plane([0, 0, 1], [0, 0, 5])
    a = np.array([[0, 0, 0], [0, 0, 1], [0, 0, 1.5]])
    b = np.array([[0, 0, 2], [0, 0, 3], [9, 9, 3]])
    assert plane.meets_segments(a, b).tolist() == [True, True, False]
    slab = Plane([0, 0, 1], [0, 0, 1], thickness=1.0)
    assert slab.contains(np.array([[5, 5, 1.5], [5, 5, 1.6], [0, 0, 0.5]])).tolist() == [
        True,
        False,
        True,
    ]


@pytest.mark.parametrize("region", [Box([0, 0, 0], [1, 2, 1]), Sphere([0, 1, 0], 0.7)])
def test_segments_agree_with_dense_samples(region) -> None:
    rng = np.random.default_rng(3)
    a, b = rng.uniform(-2, 3, (2000, 3)), rng.uniform(-2, 3, (2000, 3))
    t = np.linspace(0, 1, 400)
    samples = a[:, None] + t[None, :, None] * (b - a)[:, None]
    sampled = region.contains(samples.reshape(-1, 3)).reshape(len(a), -1).any(axis=1)
    exact = region.meets_segments(a, b)
    assert np.all(exact[sampled])  # a sample inside: the segment meets it
    assert int((exact & ~sampled).sum()) < 20  # misses only grazes between samples
    ends = region.contains(a) | region.contains(b)
    assert sampled.sum() > 100 and (sampled & ~ends).sum() > 20  # through, no vertex inside


def test_outcodes_of_float32_points_are_those_of_their_values() -> None:
    """The codes of float32 points (compared in float32) equal those of the same values in
    float64, bounds between two float32 values and on one of them alike."""
    rng = np.random.default_rng(4)
    points = rng.uniform(-3, 3, (50_000, 3)).astype(np.float32)
    lo, hi = (
        np.array([-1.0, -abs(float(points[0, 1])), -0.3]),
        np.array([1 / 3, 2.0, abs(float(points[1, 2]))]),
    )
    for region in (Box(lo, hi), Sphere([0.1, 0.2, 0.3], 1 / 3)):
        assert np.array_equal(region.outcodes(points), region.outcodes(points.astype(np.float64)))
    assert (Box(lo, hi).outcodes(points) == 0).sum() > 500


def test_outcodes_bits_per_side_in_any_number_of_axes() -> None:
    """A bit per axis and side (below: ``2 k``, above: ``2 k + 1``), in 2 axes as in 5."""
    for ndim in (2, 5):
        box = Box(np.zeros(ndim), np.ones(ndim))
        points = np.full((3, ndim), 0.5)
        points[0, 0], points[1, -1], points[2] = -1.0, 2.0, 2.0
        expected = [1, 1 << (2 * ndim - 1), sum(1 << (2 * k + 1) for k in range(ndim))]
        assert box.outcodes(points).tolist() == expected
        assert box.outcodes(points).dtype == np.uint32


def test_contains_coded_is_contains() -> None:
    """``contains_coded`` (what a selection tests its chunks' vertices with) equals
    ``contains``: a box decides by the codes alone, float32 points on its faces too."""
    rng = np.random.default_rng(6)
    points = rng.uniform(-2, 2, (20_000, 3)).astype(np.float32)
    lo = points[:3].min(axis=0).astype(np.float64)  # faces through some of the points
    hi = points[3:6].max(axis=0).astype(np.float64)
    for region in (Box(lo, hi), Box(lo + 1e-9, hi - 1e-9), Sphere([0.1, 0.2, 0.3], 1.1)):
        for p in (points, points.astype(np.float64)):
            inside = region.contains(p)
            assert np.array_equal(region.contains_coded(p, region.outcodes(p)), inside)
            assert inside.sum() > 1000
    on_face = Box(lo, hi).contains(points[:6])
    assert on_face.sum() >= 2


def test_boxes_met() -> None:
    lo = np.array([[0, 0, 0], [5, 5, 5], [1.5, 0.5, 0]])  # the third touches the box
    hi = lo + 1
    assert Box([0, 0, 0], [1.5, 1.5, 1.5]).meets_boxes(lo, hi).tolist() == [True, False, True]
    assert Sphere([4, 4, 4], 1.8).meets_boxes(lo, hi).tolist() == [False, True, False]
    assert Plane([0, 0, 5.5], [0, 0, 1]).meets_boxes(lo, hi).tolist() == [False, True, False]


@pytest.mark.parametrize(
    "region",
    [Box([0, 0, 0], [1, 2, 1]), Sphere([0, 1, 0], 0.7), Plane([0, 0, 0.5], [1, 1, 0.3], 0.2)],
)
def test_box_codes_prune_only_segments_that_miss(region) -> None:
    """Two boxes sharing a code bit: no segment from a point of one to a point of the other
    meets the region (what prunes the cross-chunk segments of a selection); and the codes
    prune many of the pairs that miss."""
    rng = np.random.default_rng(5)
    lo_a, lo_b = rng.uniform(-3, 3, (2, 4000, 3))
    hi_a, hi_b = lo_a + rng.uniform(0, 1.5, (4000, 3)), lo_b + rng.uniform(0, 1.5, (4000, 3))
    pruned = (region.box_codes(lo_a, hi_a) & region.box_codes(lo_b, hi_b)) != 0
    for _ in range(20):  # segments between random points of the two boxes
        a = lo_a + rng.random((4000, 3)) * (hi_a - lo_a)
        b = lo_b + rng.random((4000, 3)) * (hi_b - lo_b)
        assert not np.any(region.meets_segments(a, b) & pruned)
    missing = ~region.meets_boxes(np.minimum(lo_a, lo_b), np.maximum(hi_a, hi_b))
    assert pruned.sum() > 0.5 * missing.sum()


@pytest.mark.parametrize(
    "region",
    [Box([0, 0, 0], [1, 2, 1]), Sphere([0, 1, 0], 0.7), Plane([0, 0, 0.5], [1, 1, 0.3], 0.2)],
)
def test_sweeps_keep_every_segment_that_meets(region) -> None:
    """``meets_sweeps`` of two boxes (or a point and a box) is never False when a segment
    from a point of one to a point of the other meets the region, and it is tighter than
    the box around both (what leaves a selection few far chunks to read)."""
    rng = np.random.default_rng(8)
    lo_a, lo_b = rng.uniform(-3, 3, (2, 4000, 3))
    hi_a, hi_b = lo_a + rng.uniform(0, 1.5, (4000, 3)), lo_b + rng.uniform(0, 1.5, (4000, 3))
    hi_a[:2000] = lo_a[:2000]  # points (an end already read)
    swept = region.meets_sweeps(lo_a, hi_a, lo_b, hi_b)
    for _ in range(20):  # segments between random points of the two boxes
        a = lo_a + rng.random((4000, 3)) * (hi_a - lo_a)
        b = lo_b + rng.random((4000, 3)) * (hi_b - lo_b)
        assert not np.any(region.meets_segments(a, b) & ~swept)
    lo, hi = np.minimum(lo_a, lo_b), np.maximum(hi_a, hi_b)
    bounded = Box(*region.bounds()) if isinstance(region, Sphere) else region  # (its bounds)
    around = bounded.meets_boxes(lo, hi)
    assert not np.any(swept & ~around)
    assert (around & ~swept).sum() > 100
    nan = np.full((1, 3), np.nan)
    assert not region.meets_sweeps(nan, nan, lo_b[:1], hi_b[:1]).any()


def test_sphere_sweeps_are_the_balls_not_its_bounds() -> None:
    """A sphere's sweeps are tested against the ball, not the cube around it: segments by
    a corner of the cube that miss the ball are dropped, those that meet it are kept; over
    random boxes, few sweeps kept have no sampled segment meeting the ball."""
    ball = Sphere([0, 0, 0], 1.0)
    cube = Box([-1, -1, -1], [1, 1, 1])
    a = np.array([[0.95, 0.95, 2.0], [0.6, 0.6, 2.0]])
    lo_b, hi_b = np.array([[0.9, 0.9, -3], [0.6, 0.6, -3]]), np.array([[1, 1, -2], [0.7, 0.7, -2]])
    assert cube.meets_sweeps(a, a, lo_b, hi_b).tolist() == [True, True]
    assert ball.meets_sweeps(a, a, lo_b, hi_b).tolist() == [False, True]
    rng = np.random.default_rng(9)
    lo_a, lo_b = rng.uniform(-3, 3, (2, 4000, 3))
    hi_a, hi_b = lo_a + rng.uniform(0, 1.5, (4000, 3)), lo_b + rng.uniform(0, 1.5, (4000, 3))
    hi_a[:2000] = lo_a[:2000]
    swept = ball.meets_sweeps(lo_a, hi_a, lo_b, hi_b)
    sampled = np.zeros(4000, bool)
    for _ in range(50):  # segments between random points of the two boxes
        p = lo_a + rng.random((4000, 3)) * (hi_a - lo_a)
        q = lo_b + rng.random((4000, 3)) * (hi_b - lo_b)
        sampled |= ball.meets_segments(p, q)
    assert not np.any(sampled & ~swept)
    # the least distance from the centre to the box at t, on a fine grid of t
    t = np.linspace(0, 1, 2001)[:, None, None]
    low, high = lo_a + t * (lo_b - lo_a), hi_a + t * (hi_b - hi_a)
    least = np.linalg.norm(np.clip(0.0, low, high), axis=2).min(axis=0)
    assert np.all(swept[least <= 1.0])
    assert not np.any(swept[least > 1.0 + 1e-2])
    assert (cube.meets_sweeps(lo_a, hi_a, lo_b, hi_b) & ~swept).sum() > 100


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Box([0, 0], [1]), "differ"),
        (lambda: Box([2, 0], [1, 1]), "exceeds"),
        (lambda: Sphere([0, 0, 0], -1), "radius"),
        (lambda: Plane([0, 0, 0], [0, 0, 0]), "zero"),
        (lambda: Box([0, np.nan], [1, 1]), "finite"),
        (lambda: Box([0], [1], space="voxel"), "space"),
    ],
)
def test_bad_regions(make, message) -> None:
    with pytest.raises(ValueError, match=message):
        make()


# -- exact against brute force --------------------------------------------------------------
def test_tracks300_exact(tracks300_store) -> None:
    store = nzv.open_store(tracks300_store[0])
    assert assert_exact(store, n=8, seed=1) > 20


def test_count_reaching_counts_the_objects_in_the_regions_cells(tracks300_store) -> None:
    """The coarse count: the objects with a vertex in a chunk every include region's cell
    meets (brute force over the whole read), at least the exact selection's."""
    store = nzv.open_store(tracks300_store[0])
    g = store.read(0)
    lo, hi = (np.asarray(b, float) for b in store.bounds)
    info = store.level(0)
    edge = np.asarray(info.chunk_shape, float)[-3:]
    cell = np.floor((g.positions - info.chunk_origin) / edge)
    regions = [Sphere((lo + hi) / 2, float(np.min(hi - lo)) / 5), Box(lo, (lo + hi) / 2)]
    for include in ([regions[0]], regions):
        objects = set(np.unique(g.vertex_object_ids).tolist())
        for r in include:
            near = r.meets_boxes(
                info.chunk_origin + cell * edge, info.chunk_origin + (cell + 1) * edge
            )
            objects &= set(np.unique(g.vertex_object_ids[near]).tolist())
        n = nzv.count_reaching(store, include=include)
        assert n == len(objects)
        assert len(select_objects(store, include=include)) <= n < 300
    assert nzv.count_reaching(store, any_of=regions) >= nzv.count_reaching(store, include=regions)


def test_tracks300_segment_without_vertex_inside(tracks300_store) -> None:
    """A tiny box around the middle of the longest segment: no vertex inside, yet the
    streamline crosses it."""
    store = nzv.open_store(tracks300_store[0])
    g = store.read(0)
    e = np.asarray(g.edges)
    length = np.linalg.norm(g.positions[e[:, 1]] - g.positions[e[:, 0]], axis=1)
    k = int(np.argmax(length))
    mid = (g.positions[e[k, 0]] + g.positions[e[k, 1]]) / 2
    box = Box(mid - 0.05, mid + 0.05)
    assert not box.contains(g.positions).any()
    owner = int(g.vertex_object_ids[e[k, 0]])
    crossing = select_objects(store, include=[box])
    assert owner in crossing.tolist()
    assert set(crossing.tolist()) == brute(store, box, "crosses")
    assert select_objects(store, include=[box], test="vertex").size == 0


def test_tracks300_include_any_of_exclude(tracks300_store) -> None:
    store = nzv.open_store(tracks300_store[0])
    regions = list(random_regions(store, 6, seed=7))
    every = set(store.object_ids(0).tolist())
    for k in range(0, len(regions) - 3, 3):
        inc, any1, any2, exc = regions[k], regions[k + 1], regions[k + 2], regions[k + 3]
        want = brute(store, inc, "crosses") & (
            brute(store, any1, "crosses") | brute(store, any2, "crosses")
        )
        want -= brute(store, exc, "crosses")
        got = select_objects(store, include=[inc], any_of=[any1, any2], exclude=[exc])
        assert set(got.tolist()) == want
        only_exc = select_objects(store, exclude=exc)  # a single region is accepted
        assert set(only_exc.tolist()) == every - brute(store, exc, "crosses")
    assert select_objects(store).tolist() == sorted(every)


def test_exclusion_sees_the_whole_path(tracks300_store) -> None:
    """An object is excluded by a region far from where it was included."""
    store = nzv.open_store(tracks300_store[0])
    g = store.read(0)
    rows = g.paths[0]
    first, last = g.positions[rows[0]], g.positions[rows[-1]]
    near_first, near_last = Sphere(first, 1.0), Sphere(last, 1.0)
    oid = int(g.path_object_ids[0])
    assert oid in select_objects(store, include=[near_first]).tolist()
    assert oid not in select_objects(store, include=[near_first], exclude=[near_last]).tolist()


def test_neurons_exact(neurons_store) -> None:
    store = nzv.open_store(neurons_store[0])
    assert assert_exact(store, n=8, seed=2) > 5


@pytest.mark.parametrize(
    "name",
    [
        "v09/streamlines",
        "v09/polylines",
        "v09/lines",
        "v09/graph",
        "v09/skeleton",
        "v09/mesh",
        "v09/points",
        "v07/streamlines",
        "v07/mesh",
        "v07/points",
        "dense/streamlines",
        "next/points_categorical",
    ],
)
def test_fixture_stores_exact(name: str) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        store = nzv.open_store(DATA / f"{name}.zarrvectors")
        assert assert_exact(store, n=6, seed=4) > 0


def test_world_space(data_dir: Path) -> None:
    """A TRK ingest in voxmm: regions in RAS mm are tested where the crs places it."""
    store = nzv.open_store(data_dir / "next" / "trk_crs.zarrvectors")
    assert store.placement.source == "trackvis_header"
    assert assert_exact(store, n=6, seed=5, space="world") > 3
    # the same box taken as store coordinates selects other objects: the placement is applied
    world = store.placement.apply(store.read(0).positions)
    centre = np.median(world, axis=0)
    box = Box(centre - 8, centre + 8, space="world")
    got = set(select_objects(store, include=[box]).tolist())
    assert got and got == brute(store, box, "crosses")
    assert got != set(select_objects(store, include=[Box(box.lo, box.hi)]).tolist())


def test_damaged_chunks_and_fragments_as_a_read_leaves_them(tracks300_store, tmp_path) -> None:
    """A selection leaves out what a read leaves out, and equals brute force over that
    read: the fullest vertex chunk cut short (it cannot be decoded: the paths break there),
    and a manifest entry naming a fragment its chunk does not hold (a piece of no
    vertices). Regions around that chunk select otherwise than on the undamaged store."""
    path = tmp_path / "tracks300.zarrvectors"
    shutil.copytree(tracks300_store[0], path)
    clean = nzv.open_store(path).read(0)
    info = nzv.open_store(path).level(0)
    folder = path / "0/vertices/c"
    victim = max((f for f in folder.rglob("*") if f.is_file()), key=lambda f: f.stat().st_size)
    victim.write_bytes(victim.read_bytes()[:-5])
    name_a_missing_fragment(path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        store = nzv.open_store(path)
        damaged = store.read(0)
        assert 0 < damaged.vertex_count < clean.vertex_count
        # the cell the damaged read lacks (the file's key is its array's, not the level's)
        edge = np.asarray(info.chunk_shape, float)[-3:]
        cells = {tuple(c) for c in np.floor((clean.positions - info.chunk_origin) / edge)}
        lost = cells - {tuple(c) for c in np.floor((damaged.positions - info.chunk_origin) / edge)}
        middle = info.chunk_origin + (np.array(lost.pop()) + 0.5) * edge
        near = [Box(middle - edge / 4, middle + edge / 4), Sphere(middle, float(edge.min()))]
        undamaged = nzv.open_store(tracks300_store[0])
        found = differ = 0
        for region in [*near, *random_regions(store, 4, seed=11)]:
            for test in ("crosses", "vertex"):
                got = select_objects(store, include=[region], test=test)
                assert set(got.tolist()) == brute(store, region, test), (region, test)
                found += bool(got.size)
                differ += not np.array_equal(got, select_objects(undamaged, region, test=test))
        assert found > 3 and differ > 1


# -- reads, progress, cancellation, errors --------------------------------------------------
def test_reads_only_the_chunks_a_region_reaches(tracks300_store, monkeypatch) -> None:
    """The chunks a box read reads are decoded first (no geometry assembled: no
    ``Store.read``), then a few more for the segments leaving them."""
    store = nzv.open_store(tracks300_store[0])
    loads = []
    original = select_module.load_chunks

    def spy(layout, level, chunks, *args, **kwargs):
        loads.append(set(map(tuple, np.asarray(chunks).tolist())))
        return original(layout, level, chunks, *args, **kwargs)

    def no_read(*args, **kwargs):
        raise AssertionError("a store with chunks of its own is selected from its chunks")

    lo, hi = (np.asarray(v, float) for v in store.bounds)
    centre = np.median(store.read(0).positions, axis=0)
    box = Box(centre - (hi - lo) * 0.05, centre + (hi - lo) * 0.05)
    box_chunks = set(map(tuple, store.read(0, bbox=(box.lo, box.hi)).chunks.tolist()))
    monkeypatch.setattr(select_module, "load_chunks", spy)
    monkeypatch.setattr(store, "read", no_read)
    got = select_objects(store, include=[box])
    monkeypatch.undo()
    assert got.size > 0 and set(got.tolist()) == brute(store, box, "crosses")
    assert loads[0] == box_chunks
    read = set().union(*loads)
    assert box_chunks < read and len(read) < len(store.chunks(0)) / 4


def test_progress_and_cancel(tracks300_store) -> None:
    store = nzv.open_store(tracks300_store[0])
    steps = []
    regions = list(random_regions(store, 1, seed=8))
    select_objects(
        store, include=regions[:1], exclude=regions[1:], progress=lambda *s: steps.append(s)
    )
    assert [s[:2] for s in steps] == [(0, 3), (1, 3), (2, 3), (3, 3)]
    assert steps[0][2].startswith("include Box(") and steps[2][2].startswith("exclude Plane(")
    assert steps[-1][2].endswith("objects selected")
    cancel = threading.Event()
    cancel.set()
    with pytest.raises(ZVCancelledError):
        select_objects(store, include=regions, cancel=cancel)


def test_errors(data_dir: Path) -> None:
    mesh = nzv.open_store(data_dir / "v09" / "mesh.zarrvectors")
    box = Box([0, 0, 0], [1, 1, 1])
    with pytest.raises(ValueError, match="test must be one of"):
        select_objects(mesh, include=[box], test="inside")
    with pytest.raises(ValueError, match="needs paths"):
        select_objects(mesh, include=[box], test="endpoints")
    with pytest.raises(ValueError, match="3 axes"):
        select_objects(mesh, include=[Box([0, 0], [1, 1])])
    with pytest.raises(TypeError, match="Box, Sphere or Plane"):
        select_objects(mesh, include=[(0, 1)])
    binned = nzv.open_store(data_dir / "v09" / "points_binned.zarrvectors")
    with pytest.raises(ZVError, match="no objects"):
        select_objects(binned, include=[box])
