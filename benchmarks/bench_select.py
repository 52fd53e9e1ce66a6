"""Selection by region at scale: ``select_objects`` against a box read of the same region.

    python benchmarks/bench_select.py [--store PATH]

The store is the 10M-vertex, 200k-streamline tractogram of ``bench_scale.py`` (written once
into ``benchmarks/.work/``; ``--store`` reads another). Regions of 1% of the volume are placed
at ``--places`` spots where the streamlines are dense; for each, in one process, warm (the
object index decoded, the chunks in the OS page cache), best of ``--repeats``:

* ``box_over_read``: ``select_objects(include=[Box])`` (``"crosses"``) / ``Store.read(bbox=)``
  of the same box (target <= 2, issue 40);
* ``sphere_over_read``: the same for the sphere of the same volume and centre / the read of
  the box around it;
* ``vertex_over_read``: the ``"vertex"`` test of the box / its read;
* ``exact``: the selection equals brute force (the whole level read, every segment tested)
  at every place (``--no-exact`` skips it: it reads 10M vertices).

Results: ``benchmarks/results/bench_select.json`` and a table on stdout.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
import napari_zarr_vectors as nzv  # noqa: E402
from bench_core import best_of  # noqa: E402
from bench_scale import ensure_store  # noqa: E402


def brute(store: nzv.Store, whole: nzv.Geometry, region) -> set[int]:
    pos, vid = whole.positions, whole.vertex_object_ids
    edges = np.asarray(whole.edges)
    seg = region.meets_segments(pos[edges[:, 0]], pos[edges[:, 1]])
    return set(np.unique(vid[region.contains(pos)]).tolist()) | set(
        np.unique(vid[edges[seg, 0]]).tolist()
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--store", help="default: the bench_scale tractogram")
    ap.add_argument("--places", type=int, default=3)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-exact", action="store_true")
    args = ap.parse_args()
    path = Path(args.store) if args.store else ensure_store(200_000, 50)
    store = nzv.open_store(path)
    store.object_index(0)
    lo, hi = (np.asarray(v, float) for v in store.bounds)
    side = (hi - lo) * 0.01 ** (1 / 3)  # a box of 1% of the volume
    radius = float((3 * np.prod(side) / (4 * np.pi)) ** (1 / 3))  # a sphere of the same
    sample = store.read(store.levels[-1].index).positions
    rng = np.random.default_rng(0)
    centres = sample[rng.choice(len(sample), args.places, replace=False)].astype(float)
    whole = None if args.no_exact else store.read(0, attributes=False)
    rows = []
    for centre in centres:
        box = nzv.Box(centre - side / 2, centre + side / 2)
        sphere = nzv.Sphere(centre, radius)
        g = store.read(0, bbox=(box.lo, box.hi))
        ids_box = nzv.select_objects(store, include=[box])
        ids_sph = nzv.select_objects(store, include=[sphere])
        t_read = best_of(lambda b=box: store.read(0, bbox=(b.lo, b.hi)), args.repeats)
        t_sread = best_of(
            lambda s=sphere: store.read(0, bbox=(s.center - radius, s.center + radius)),
            args.repeats,
        )
        t_box = best_of(lambda b=box: nzv.select_objects(store, include=[b]), args.repeats)
        t_sph = best_of(lambda s=sphere: nzv.select_objects(store, include=[s]), args.repeats)
        t_vtx = best_of(
            lambda b=box: nzv.select_objects(store, include=[b], test="vertex"), args.repeats
        )
        row = {
            "centre": centre.round(1).tolist(),
            "box_read_vertices": g.vertex_count,
            "box_selected": int(ids_box.size),
            "sphere_selected": int(ids_sph.size),
            "box_over_read": t_box / t_read,
            "sphere_over_read": t_sph / t_sread,
            "vertex_over_read": t_vtx / t_read,
        }
        if whole is not None:
            row["exact"] = set(ids_box.tolist()) == brute(store, whole, box) and set(
                ids_sph.tolist()
            ) == brute(store, whole, sphere)
        rows.append(row)
        print(
            f"{row['centre']}: box {row['box_over_read']:.2f}x, sphere "
            f"{row['sphere_over_read']:.2f}x, vertex {row['vertex_over_read']:.2f}x "
            f"({row['box_selected']:,} / {row['sphere_selected']:,} objects; "
            f"exact {row.get('exact', 'not checked')})",
            flush=True,
        )
    out = HERE / "results" / "bench_select.json"
    out.parent.mkdir(exist_ok=True)
    out.write_text(json.dumps({"store": path.name, "places": rows}, indent=2))
    print(f"written {out}")


if __name__ == "__main__":
    main()
