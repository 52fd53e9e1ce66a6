"""The slice position in world units beside napari's dims sliders.

napari's slider shows a step index ("8 | 16"); a scientist wants to know where the slice is
("z 87.5 mm"). Once per viewer (:func:`install`), the label after each slider of an axis
with a unit other than pixels reads ``16 · z 87.5 mm`` (last step, position, unit), updated
as the slice moves.
"""

from __future__ import annotations

import weakref
from typing import Any

from napari_zarr_vectors.napari._napari_compat import slider_total_label


def caption(viewer: Any, axis: int) -> str | None:
    """``"z 87.5 mm"`` for dims ``axis``; ``None`` when the axis has no unit (pixels)."""
    dims = viewer.dims
    units = dims.units
    unit = None if units is None or axis >= len(units) else units[axis]
    if unit is None or str(unit) == "pixel":
        return None
    value = float(dims.point[axis])
    return f"{dims.axis_labels[axis]} {value:.6g} {unit:~}"


def update(viewer: Any) -> None:
    """Write the world position beside every slider of ``viewer``."""
    dims = viewer.dims
    for axis in range(int(dims.ndim)):
        label = slider_total_label(viewer, axis)
        text = caption(viewer, axis)
        if label is None or text is None:
            continue
        text = f"{dims.nsteps[axis] - 1} · {text}"
        label.setText(text)
        # napari sizes the label for the step count only
        label.setFixedWidth(label.fontMetrics().boundingRect(text).width() + 8)


def install(viewer: Any) -> None:
    """Keep ``viewer``'s slider captions up to date (call once per viewer)."""
    ref = weakref.ref(viewer)

    def on_change(event: Any = None) -> None:
        v = ref()
        if v is not None:
            update(v)

    events = viewer.dims.events
    for emitter in (events.point, events.range, events.units, events.ndisplay, events.order):
        emitter.connect(on_change)
