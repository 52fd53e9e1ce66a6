"""The *Dissect* model: 3-D regions with roles over a whole store, their selection, named
bundles, and the JSON file they are kept in. No Qt (the dock,
:mod:`napari_zarr_vectors.napari.widgets.dissect`, is a thin view over it).

A :class:`Dissection` holds, for one store, a list of :class:`RegionSpec` (a box, sphere or
plane in **store coordinates**: store axis order, store units), each with a role
(``include``: the objects must meet it; ``any_of``: at least one of these; ``exclude``: none
of these) and the test the format core applies (:data:`~napari_zarr_vectors.format.select.TESTS`,
``"crosses"`` by default). Whenever they change it counts the selected objects with
:func:`~napari_zarr_vectors.format.select.select_objects` over **every object of the
level** on the plugin's background runner (:func:`..tasks.run_task`), cancelling a run the
change made stale, and puts the result in the store's shared
:class:`~.selection.ObjectSelection` (the Object table, *show only* and *dim the rest* use
it). A result can be kept as a :class:`Bundle` (a name, a colour, the ids and the regions
that chose them).

:func:`save_dissection` / :func:`load_dissection` write and read the regions and bundles as
a JSON file (:data:`FILE_FORMAT`, described in ``docs/browsing.md``), never inside the store.
"""

from __future__ import annotations

import json
import os
import threading
import weakref
from collections.abc import Generator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from napari.utils.events import EmitterGroup, Event

from napari_zarr_vectors.format.distinct import distinct
from napari_zarr_vectors.format.errors import ZVError
from napari_zarr_vectors.format.regions import Box, Plane, Region, Sphere
from napari_zarr_vectors.format.select import TESTS, count_reaching, select_objects
from napari_zarr_vectors.napari.browse.selection import selection_for
from napari_zarr_vectors.napari.colour.defaults import categorical_rgba
from napari_zarr_vectors.napari.layerdata.placement import Placement
from napari_zarr_vectors.napari.tasks import LoadJob, run_task

if TYPE_CHECKING:
    from napari.viewer import Viewer

    from napari_zarr_vectors.format.api import GeometryStore
    from napari_zarr_vectors.napari.browse.selection import ObjectSelection
    from napari_zarr_vectors.napari.browse.targets import BrowseTarget

#: the region kinds of the dock
KINDS = ("box", "sphere", "plane")
#: the roles a region plays (:func:`select_objects`' ``include``, ``any_of``, ``exclude``)
ROLES = ("include", "any_of", "exclude")
#: ``"format"`` of the JSON file, and its version
FILE_FORMAT = "napari-zarr-vectors dissection"
FILE_VERSION = 1
#: a new region's size: its box edges, sphere diameter and plane's square this share of the
#: store's extent
NEW_REGION_SHARE = 0.2

#: a level of more vertices than this is counted coarsely first, from its object index
#: (:func:`~napari_zarr_vectors.format.select.count_reaching`: the dock shows
#: "≈ N (coarse)"), then exactly
COARSE_FIRST_VERTICES = 2_000_000

#: outline colour of each role
ROLE_COLOURS = {
    "include": (0.3, 1.0, 0.4, 1.0),
    "any_of": (1.0, 0.8, 0.2, 1.0),
    "exclude": (1.0, 0.3, 0.3, 1.0),
}


@dataclass
class RegionSpec:
    """One region of a dissection, in store coordinates (store axis order and units).

    ``center`` is a box's or sphere's centre, a plane's point; ``size`` a box's edge lengths;
    ``radius`` a sphere's; ``normal`` and ``thickness`` a plane's."""

    kind: str
    center: np.ndarray
    role: str = "include"
    name: str = ""
    size: np.ndarray | None = None
    radius: float = 0.0
    normal: np.ndarray | None = None
    thickness: float = 0.0

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"region kind must be one of {KINDS}, not {self.kind!r}")
        if self.role not in ROLES:
            raise ValueError(f"region role must be one of {ROLES}, not {self.role!r}")
        self.center = np.asarray(self.center, np.float64).reshape(-1)
        n = self.center.size
        if self.size is not None:
            self.size = np.asarray(self.size, np.float64).reshape(-1)
        if self.normal is not None:
            self.normal = np.asarray(self.normal, np.float64).reshape(-1)
        if self.kind == "box" and (self.size is None or self.size.size != n):
            raise ValueError(f"a box needs {n} edge lengths, not {self.size}")
        if self.kind == "plane" and (self.normal is None or self.normal.size != n):
            raise ValueError(f"a plane needs a normal of {n} numbers, not {self.normal}")

    def region(self) -> Region:
        """The format core's region (``space="store"``); raises ``ValueError`` when the
        numbers make none (a negative size, a zero normal)."""
        if self.kind == "box":
            half = np.asarray(self.size) / 2
            return Box(self.center - half, self.center + half)
        if self.kind == "sphere":
            return Sphere(self.center, self.radius)
        assert self.normal is not None  # a plane has one (__post_init__)
        return Plane(self.center, self.normal, self.thickness)

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"name": self.name, "kind": self.kind, "role": self.role}
        if self.kind == "box":
            assert self.size is not None  # a box has one (__post_init__)
            out.update(center=self.center.tolist(), size=self.size.tolist())
        elif self.kind == "sphere":
            out.update(center=self.center.tolist(), radius=float(self.radius))
        else:
            assert self.normal is not None  # a plane has one (__post_init__)
            out.update(
                point=self.center.tolist(),
                normal=self.normal.tolist(),
                thickness=float(self.thickness),
            )
        return out

    @classmethod
    def from_json(cls, item: dict[str, Any]) -> RegionSpec:
        kind: Any = item.get("kind")  # checked by __post_init__
        center = item.get("point") if kind == "plane" else item.get("center")
        if center is None:
            raise ValueError(f"region {item!r} has no {'point' if kind == 'plane' else 'center'}")
        return cls(
            kind=kind,
            center=center,
            role=item.get("role", "include"),
            name=str(item.get("name", "")),
            size=item.get("size"),
            radius=float(item.get("radius", 0.0)),
            normal=item.get("normal"),
            thickness=float(item.get("thickness", 0.0)),
        )

    def copy(self) -> RegionSpec:
        return RegionSpec.from_json(self.to_json())


@dataclass
class Bundle:
    """A kept result: a name, its colour (RGBA in 0..1), the selected ids, and the regions
    and test that selected them."""

    name: str
    colour: tuple[float, ...]
    object_ids: np.ndarray
    regions: list[RegionSpec] = field(default_factory=list)
    test: str = "crosses"

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "colour": [float(c) for c in self.colour],
            "test": self.test,
            "regions": [r.to_json() for r in self.regions],
            "object_ids": np.asarray(self.object_ids, np.int64).tolist(),
        }

    @classmethod
    def from_json(cls, item: dict[str, Any]) -> Bundle:
        colour = tuple(float(c) for c in item.get("colour", (1.0, 1.0, 1.0, 1.0)))
        if len(colour) == 3:
            colour = (*colour, 1.0)
        return cls(
            name=str(item["name"]),
            colour=colour,
            object_ids=distinct(np.asarray(item.get("object_ids", []), np.int64)),
            regions=[RegionSpec.from_json(r) for r in item.get("regions", [])],
            test=str(item.get("test", "crosses")),
        )


#: the id hues a bundle may take: none within :data:`_NOT_NEAR_A_ROLE` (RGB distance) of
#: a role's outline colour, so that an outline stays visible over the bundle it made
_BUNDLE_HUES = [
    tuple(float(c) for c in rgba)
    for rgba in categorical_rgba(np.arange(1, 33))
    if min(np.linalg.norm(rgba[:3] - np.asarray(r[:3])) for r in ROLE_COLOURS.values()) > 0.3
]


def bundle_colour(index: int) -> tuple[float, ...]:
    """The colour of the ``index``-th bundle (0-based; distinct and stable: the plugin's id
    hues, less those near a role's outline colour)."""
    return _BUNDLE_HUES[index % len(_BUNDLE_HUES)]


def regions_by_role(
    specs: Sequence[RegionSpec],
) -> tuple[tuple[Region, ...], tuple[Region, ...], tuple[Region, ...]]:
    """``(include, any_of, exclude)`` of :func:`select_objects` for ``specs``."""
    out: dict[str, list[Region]] = {role: [] for role in ROLES}
    for spec in specs:
        out[spec.role].append(spec.region())
    return tuple(out["include"]), tuple(out["any_of"]), tuple(out["exclude"])


def view_centre(viewer: Viewer, store: GeometryStore) -> np.ndarray:
    """The point at the centre of the view (the camera's centre on the displayed axes, the
    slice on the others) in ``store``'s coordinates (store order, the world placement
    undone: :meth:`~..layerdata.placement.Placement.to_store_box`)."""
    point = np.asarray(viewer.dims.point, np.float64).copy()
    displayed = list(viewer.dims.displayed)
    point[displayed] = np.asarray(viewer.scene.camera.center, np.float64)[-len(displayed) :]
    ndim = int(store.ndim)
    world = (
        point[-ndim:]
        if len(point) >= ndim
        else np.concatenate([np.zeros(ndim - len(point)), point])
    )
    return Placement.of(store).to_store_box(world, world)[0]


def new_region(kind: str, store: GeometryStore, centre: np.ndarray, number: int) -> RegionSpec:
    """A region of ``kind`` at ``centre`` (store coordinates), sized by the store's extent
    (:data:`NEW_REGION_SHARE`); a box spans the whole store on its non-space axes (time: a
    place at every time point); a plane's normal is the store's first axis."""
    lo, hi = (np.asarray(b, np.float64) for b in store.bounds)
    extent = np.where(hi > lo, hi - lo, 1.0)
    name = f"{kind} {number}"
    if kind == "box":
        whole = np.asarray(store.axis_types) != "space"
        centre = np.where(whole, (lo + hi) / 2, np.asarray(centre, np.float64))
        size = np.where(whole, extent, extent * NEW_REGION_SHARE)
        return RegionSpec("box", centre, name=name, size=size)
    if kind == "sphere":
        radius = float(np.min(extent)) * NEW_REGION_SHARE / 2
        return RegionSpec("sphere", centre, name=name, radius=radius)
    normal = np.zeros(len(centre))
    normal[0] = 1.0
    return RegionSpec("plane", centre, name=name, normal=normal)


class Dissection:
    """Regions, their selection and bundles for one store (see the module docstring).

    Events (``self.events``): ``regions`` (the list or a region changed), ``count`` (a new
    result: ``value`` the ids, ``None`` while counting), ``bundles`` (kept, removed,
    renamed, loaded), ``status`` (``value``: a sentence for the dock)."""

    def __init__(
        self, store: GeometryStore, selection: ObjectSelection | None = None, level: int = 0
    ):
        self.store = store
        self.selection = selection
        self.level = int(level)
        self.regions: list[RegionSpec] = []
        self.bundles: list[Bundle] = []
        self.test = "crosses"
        #: the ids the current regions select (``None``: no regions, or still counting)
        self.result: np.ndarray | None = None
        self.status = ""
        self.events = EmitterGroup(
            source=self, regions=Event, count=Event, bundles=Event, status=Event
        )
        self._job: LoadJob | None = None
        self._cancel: threading.Event | None = None
        self._added = 0
        #: the shared selection holds a result of this dissection
        self._published = False

    # -- regions -----------------------------------------------------------------------------
    def add(self, spec: RegionSpec) -> RegionSpec:
        """Append ``spec``; raises ``ValueError`` when it has not one coordinate per store
        axis."""
        self._check_ndim([spec])
        self.regions.append(spec)
        self._changed()
        return spec

    def add_at(self, kind: str, centre: np.ndarray) -> RegionSpec:
        """Add a new ``kind`` region at ``centre`` (store coordinates, :func:`view_centre`)."""
        self._added += 1
        return self.add(new_region(kind, self.store, centre, self._added))

    def update(self, index: int, **changes: Any) -> None:
        """Change fields of region ``index`` (``center=``, ``size=``, ``role=`` ...)."""
        spec = self.regions[index]
        values = spec.to_json() | {k: _plain(v) for k, v in changes.items()}
        if spec.kind == "plane" and "center" in values:
            values["point"] = values.pop("center")
        changed = RegionSpec.from_json(values)
        self._check_ndim([changed])
        self.regions[index] = changed
        self._changed()

    def _check_ndim(self, specs: Sequence[RegionSpec]) -> None:
        """Raise ``ValueError`` for a region without one coordinate per store axis."""
        ndim = int(self.store.ndim)
        for spec in specs:
            if spec.center.size != ndim:
                raise ValueError(
                    f"region {spec.name!r} has {spec.center.size} coordinates, "
                    f"{self.store.name} has {ndim} axes ({', '.join(map(str, self.store.axes))})"
                )

    def remove(self, index: int) -> None:
        del self.regions[index]
        self._changed()

    def set_test(self, test: str) -> None:
        if test not in TESTS:
            raise ValueError(f"test must be one of {TESTS}, not {test!r}")
        self.test = test
        self._changed()

    def _changed(self) -> None:
        self.events.regions()
        self.recount()

    # -- counting -------------------------------------------------------------------------
    def recount(self) -> LoadJob | None:
        """Select with the current regions in the background (a run still going is
        cancelled); returns the job (``None``: no regions, nothing selected)."""
        self.cancel()
        if not self.regions:
            self._set_result(None, "Add a region: the objects it selects are counted here.")
            return None
        try:
            include, any_of, exclude = regions_by_role(self.regions)
        except ValueError as e:
            self._set_result(None, f"not counted: {e}")
            return None
        cancel = threading.Event()
        self._cancel = cancel
        self._set_result(None, "counting …")
        self._job = run_task(
            _select,
            self.store,
            include,
            any_of,
            exclude,
            self.test,
            self.level,
            counts_coarse_first(self.store, self.level),
            cancel,
            on_result=self._counted,
            on_progress=self._coarse_counted,
            on_error=lambda e: self._set_status(f"not counted: {e}"),
        )
        return self._job

    def cancel(self) -> None:
        """Stop a count still running (its result is dropped)."""
        if self._cancel is not None:
            self._cancel.set()
        if self._job is not None and not self._job.done:
            self._job.quit()
        self._job = self._cancel = None

    @property
    def counting(self) -> bool:
        return self._job is not None and not self._job.done

    def _coarse_counted(self, n: int) -> None:
        """The first, approximate count (:func:`count_reaching`): a sentence only, the
        shared selection waits for the exact one."""
        self._set_status(f"≈ {n:,} (coarse) objects selected ({self.test}), counting exactly …")

    def _counted(self, ids: np.ndarray) -> None:
        n = int(len(ids))
        total = self.n_objects
        of = f" of {total:,}" if total is not None else ""
        self._set_result(ids, f"{n:,}{of} objects selected ({self.test})")

    def _set_result(self, ids: np.ndarray | None, status: str) -> None:
        """A result (``ids``) goes to the shared selection; while counting, or with no
        regions, the selection keeps what it holds, except that removing the last region
        clears the selection this dissection made."""
        self.result = ids
        if self.selection is not None:
            if ids is not None:
                self.selection.set(ids, self)
                self._published = True
            elif self._published and not self.regions:
                self.selection.clear(self)
                self._published = False
        self.events.count(value=ids)
        self._set_status(status)

    def _set_status(self, text: str) -> None:
        self.status = text
        self.events.status(value=text)

    @property
    def n_objects(self) -> int | None:
        try:
            return len(self.store.object_ids(self.level))
        except Exception:  # noqa: BLE001 - a store without an object index: no total
            return None

    # -- bundles ------------------------------------------------------------------------------
    def keep(self, name: str = "") -> Bundle | None:
        """Keep the current result as a bundle (``None``: nothing counted yet)."""
        if self.result is None:
            return None
        number = len(self.bundles) + 1
        bundle = Bundle(
            name=name or f"bundle {number}",
            colour=bundle_colour(len(self.bundles)),
            object_ids=np.asarray(self.result, np.int64).copy(),
            regions=[r.copy() for r in self.regions],
            test=self.test,
        )
        self.bundles.append(bundle)
        self.events.bundles()
        return bundle

    def rename(self, index: int, name: str) -> None:
        self.bundles[index].name = name
        self.events.bundles()

    def remove_bundle(self, index: int) -> None:
        del self.bundles[index]
        self.events.bundles()

    def restore(self, index: int) -> None:
        """Bring a bundle's regions and test back (they are counted again)."""
        bundle = self.bundles[index]
        self.regions = [r.copy() for r in bundle.regions]
        self.test = bundle.test
        self._changed()

    # -- the file --------------------------------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "format": FILE_FORMAT,
            "version": FILE_VERSION,
            "store": {"name": str(self.store.name), "path": str(self.store.path)},
            "axes": [str(a) for a in self.store.axes],
            "space": "store",
            "level": self.level,
            "test": self.test,
            "regions": [r.to_json() for r in self.regions],
            "bundles": [b.to_json() for b in self.bundles],
        }

    def load_json(self, data: dict[str, Any]) -> None:
        """Replace the regions, test and bundles by those of a dissection file's ``data``
        (:meth:`to_json`); raises ``ValueError`` for a file of another format or with
        regions of another dimension."""
        if data.get("format") != FILE_FORMAT:
            raise ValueError(f"not a dissection file (format {data.get('format')!r})")
        if int(data.get("version", 0)) > FILE_VERSION:
            raise ValueError(
                f"dissection file version {data.get('version')} is newer than this plugin's"
            )
        regions = [RegionSpec.from_json(r) for r in data.get("regions", [])]
        bundles = [Bundle.from_json(b) for b in data.get("bundles", [])]
        self._check_ndim([*regions, *(r for b in bundles for r in b.regions)])
        test = str(data.get("test", "crosses"))
        if test not in TESTS:
            raise ValueError(f"test must be one of {TESTS}, not {test!r}")
        self.regions, self.bundles, self.test = regions, bundles, test
        self._added = len(regions)
        self.events.bundles()
        self._changed()


def _plain(value: Any) -> Any:
    return (
        np.asarray(value, np.float64).tolist()
        if isinstance(value, (list, tuple, np.ndarray))
        else value
    )


def counts_coarse_first(store: GeometryStore, level: int) -> bool:
    """Whether a count of ``level`` shows a coarse one first (:func:`count_reaching`): the
    level holds more than :data:`COARSE_FIRST_VERTICES` vertices."""
    try:
        return int(store.level(level).vertex_count) > COARSE_FIRST_VERTICES
    except (ZVError, AttributeError):  # a store without levels of its own (a composite)
        return False


def _select(
    store: GeometryStore,
    include,
    any_of,
    exclude,
    test: str,
    level: int,
    coarse: bool,
    cancel,
) -> Generator[int, None, np.ndarray]:
    """The worker's side of :meth:`Dissection.recount`: with ``coarse``, the coarse count
    first (yielded), then the ids."""
    if coarse:
        yield count_reaching(store, include=include, any_of=any_of, level=level)
    return select_objects(
        store,
        include=include,
        any_of=any_of,
        exclude=exclude,
        test=test,
        level=level,
        cancel=cancel,
    )


def inside_store(path: str | os.PathLike, store: GeometryStore) -> bool:
    """Whether ``path`` lies in the store's directory (a dissection is never written there)."""
    target = Path(os.fspath(path)).resolve()
    root = Path(str(store.path)).resolve()
    return target == root or root in target.parents


def save_dissection(dissection: Dissection, path: str | os.PathLike) -> Path:
    """Write ``dissection``'s regions and bundles to the JSON file ``path`` (refused inside
    the store: ``ValueError``); returns the path."""
    target = Path(os.fspath(path))
    if target.suffix.lower() != ".json":
        target = target.with_name(target.name + ".json")
    if inside_store(target, dissection.store):
        raise ValueError(
            f"{target} is inside the store {dissection.store.path}: choose another place"
        )
    target.write_text(json.dumps(dissection.to_json(), indent=1))
    return target


def load_dissection(dissection: Dissection, path: str | os.PathLike) -> None:
    """Replace ``dissection``'s regions and bundles by those of the JSON file ``path``."""
    dissection.load_json(json.loads(Path(os.fspath(path)).read_text()))


_dissections: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()


def dissection_for(target: BrowseTarget) -> Dissection:
    """The :class:`Dissection` of ``target`` (an open store's browse target; created on first
    use, sharing the target's selection), so a dock that follows another layer and comes
    back finds its regions and bundles."""
    dissection = _dissections.get(target)
    if dissection is None:
        dissection = Dissection(target.store, selection_for(target))
        _dissections[target] = dissection
    return dissection
