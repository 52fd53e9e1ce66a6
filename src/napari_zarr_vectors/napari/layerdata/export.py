"""Export what the browse widgets selected: the isolated objects of a store, else the
objects passing its filters, else the whole store, into a new store or a file of the
field's formats (the target's suffix picks it: ``.trk``, ``.tck``, ``.trx``, ``.swc``,
``.ply``, ``.obj``, ``.stl``, ``.csv``, see :mod:`napari_zarr_vectors.write.formats`).

The objects are read whole at level 0 through their manifests (every chunk they touch, not
only the loaded ones) by :func:`napari_zarr_vectors.write.export_objects`, in the
background (:mod:`napari_zarr_vectors.napari.tasks`), with progress in napari's activity panel. The *Export…* button of the *Pick and
isolate* widget calls :func:`export_dialog`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from napari_zarr_vectors.format.distinct import distinct
from napari_zarr_vectors.napari.conventions import meta_of
from napari_zarr_vectors.napari.npe2.writer import SUFFIX, _Activity, with_suffix
from napari_zarr_vectors.napari.tasks import run_task
from napari_zarr_vectors.write.engine import WriteError, check_target
from napari_zarr_vectors.write.export import export_objects
from napari_zarr_vectors.write.formats import FILE_FORMATS, file_format, formats_for

#: What :func:`selection_ids` chose, for the status line.
ISOLATED = "isolated"
FILTERED = "filtered"
EVERYTHING = "all"
#: ids chosen by the caller (the *Object table*'s selected rows)
SELECTED = "selected"


def selection_ids(
    all_ids: np.ndarray,
    allowed: np.ndarray | None,
    isolated: Iterable[int] = (),
) -> tuple[np.ndarray | None, str]:
    """The object ids to export and why (pure).

    Isolated objects win (what the user singled out); else the ids passing the filters
    (``allowed``; ``None`` = no filter); else ``None``, the whole store.
    """
    isolated = distinct(np.fromiter((int(i) for i in isolated), np.int64))
    if isolated.size:
        return isolated, ISOLATED
    if allowed is not None:
        return distinct(np.asarray(allowed, np.int64)), FILTERED
    return None, EVERYTHING


def describe_selection(ids: np.ndarray | None, why: str, n_objects: int) -> str:
    """``"3 isolated objects"``, ``"12 of 40 objects (filters)"``, ``"the whole store"``."""
    if ids is None:
        return "the whole store"
    n = int(ids.size)
    noun = "object" if n == 1 else "objects"
    if why in (ISOLATED, SELECTED):
        return f"{n:,} {why} {noun}"
    return f"{n:,} of {n_objects:,} objects (filters)"


def widget_selection(widget: Any, ids: np.ndarray | None = None) -> tuple[np.ndarray | None, str]:
    """What a browse widget would export: ``ids`` when given (selected objects), else
    (``PickWidget``) its store's isolated objects, else the shared filters' allowed ids,
    else everything."""
    if ids is not None:
        return distinct(np.asarray(ids, np.int64)), SELECTED
    session = getattr(widget, "session", None)
    allowed = session.filters.allowed() if session is not None else None
    all_ids = session.table.ids if session is not None else np.empty(0, np.int64)
    isolated_layers = widget.isolated_layers() if hasattr(widget, "isolated_layers") else []
    metas = [meta_of(layer) or {} for layer in isolated_layers]
    isolated = [int(m["object_id"]) for m in metas if m.get("object_id") is not None]
    return selection_ids(all_ids, allowed, isolated)


def export_selection(
    widget: Any,
    path: str | os.PathLike,
    *,
    ids: np.ndarray | None = None,
    pyramid: bool = True,
    start: bool = True,
) -> Any:
    """Export the widget's selection (:func:`widget_selection`; ``ids`` when given) of its
    store to ``path`` in the background (:func:`.tasks.run_task`, its steps shown as an
    activity); returns the job (started unless ``start`` is false; its ``done`` is set when
    it is over). Some objects of a store that does not record which vertex is whose
    (:func:`.targets.objects_unknown`) are not exported: ``None``, the status says why."""
    store = widget.store
    if store is None:
        raise WriteError("select a Zarr Vectors layer first")
    ids, why = widget_selection(widget, ids)
    n_objects = widget.session.table.n_objects if widget.session is not None else 0
    status = getattr(widget, "status", None)

    def say(text: str) -> None:
        if status is not None:
            status.setText(text)

    unknown = None if widget.session is None else widget.session.objects_unknown
    if unknown is not None and ids is not None and ids.size < n_objects:
        say(f"not exported: {unknown}")
        return None
    what = describe_selection(ids, why, n_objects)
    target = check_target(export_target(path), [store.path])  # refuse before any work
    activity = _Activity(f"Exporting {target.name}")

    def exported(new_path: object) -> None:
        activity.finish()
        say(f"exported {what} to {new_path}")

    say(f"exporting {what} to {target.name} …")
    return run_task(
        partial(export_objects, pyramid=pyramid),
        store,
        target,
        ids,
        report_progress=True,
        on_progress=lambda step: activity(*step),
        on_result=exported,
        on_error=lambda e: say(f"export failed: {e}"),
        on_finished=lambda _: activity.close(),
        start=start,
    )


def export_target(path: str | os.PathLike, chosen_filter: str = "") -> Path:
    """Where an export goes: ``path`` itself when its suffix names a file format, else with
    the suffix of the dialog's ``chosen_filter`` when that is a file format's (the user
    typed no suffix), else a ``.zarrvectors`` store."""
    if file_format(path) is not None:
        return Path(os.fspath(path))
    for suffix in FILE_FORMATS:
        if f"(*{suffix})" in chosen_filter:
            return Path(os.fspath(path)).with_name(Path(os.fspath(path)).name + suffix)
    return with_suffix(path)


def export_filters(geometry_type: str) -> list[str]:
    """The file dialog's filters for a store of ``geometry_type``: a Zarr Vectors store
    first, then each file format that can hold it."""
    fits = [FILE_FORMATS[s] for s in formats_for(geometry_type)]
    return [f"Zarr Vectors (*{SUFFIX})", *(f"{f.name} (*{f.suffix})" for f in fits)]


def export_dialog(widget: Any, ids: np.ndarray | None = None) -> Any:
    """Ask for a target (a new ``.zarrvectors`` store or a file whose suffix picks its
    format, :func:`export_filters`), then :func:`export_selection` (of ``ids`` when
    given)."""
    from qtpy.QtWidgets import QFileDialog

    if widget.store is None:
        return None
    chosen = ids
    ids, why = widget_selection(widget, chosen)
    n_objects = widget.session.table.n_objects if widget.session is not None else 0
    start = str(Path(str(widget.store.path)).with_name(f"{widget.store.name}-export{SUFFIX}"))
    path, chosen_filter = QFileDialog.getSaveFileName(
        widget,
        f"Export {describe_selection(ids, why, n_objects)} (the suffix picks the format)",
        start,
        ";;".join(export_filters(str(widget.store.geometry_type))),
    )
    if not path:
        return None
    try:
        return export_selection(widget, export_target(path, chosen_filter), ids=chosen)
    except WriteError as e:
        from napari.utils.notifications import show_error

        status = getattr(widget, "status", None)
        if status is not None:
            status.setText(f"export refused: {e}")
        show_error(str(e))
        return None
