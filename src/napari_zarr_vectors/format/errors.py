"""The exception hierarchy of the format core.

Every error raised while opening or decoding a store derives from :class:`ZVError`.
Messages name the store, and where it applies the level, array and chunk, so that a
user can find the offending bytes on disk.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    import numpy as np


class ZVError(Exception):
    """Base class of every error raised by napari-zarr-vectors' format core."""


class NotAZVStoreError(ZVError):
    """The path is not a Zarr Vectors store (no Zarr v3 root with a ``zarr_vectors`` block)."""


class UnsupportedVersionError(ZVError):
    """The store declares a ZV format version (or a container layout) this reader cannot read."""


class UnsupportedCapabilityError(UnsupportedVersionError):
    """The store's root ``required_capabilities`` lists a capability this reader does not
    implement (FORMAT-NEXT §5): reading it anyway would show part of the data as if it were
    all of it, so the store is refused.

    ``capabilities`` holds the names it lacks.
    """

    def __init__(self, message: str, capabilities: Sequence[str] = ()) -> None:
        super().__init__(message)
        self.capabilities = tuple(capabilities)


class ZVArgumentError(ZVError, ValueError):
    """An argument of the reading API is malformed (a box with NaN corners, reversed
    corners or the wrong number of coordinates); the message names the store."""


class MissingDependencyError(ZVError, ImportError):
    """An optional dependency (e.g. DracoPy for Draco meshes) is needed but not installed."""


class ZVFormatError(ZVError):
    """Bytes or metadata inside a store are inconsistent with the ZV format.

    Parameters
    ----------
    message
        What is wrong.
    store, level, array, chunk
        Where it is wrong; each part that is known is appended to the message.
    key
        The stored file (key in the store) holding the bytes, when it differs from what the
        chunk index says: a 0.9 array addresses chunk ``2.0.1`` through its grid origin, e.g.
        ``0/vertices/c/4/2/3``, and a shard file holds several chunks.
    """

    def __init__(
        self,
        message: str,
        *,
        store: str | None = None,
        level: int | None = None,
        array: str | None = None,
        chunk: Sequence[int] | np.ndarray | str | None = None,
        key: str | None = None,
    ) -> None:
        self.reason = message
        self.store = store
        self.level = level
        self.array = array
        self.chunk = chunk_key(chunk) if chunk is not None and not isinstance(chunk, str) else chunk
        self.key = key
        super().__init__(self._compose())

    def _compose(self) -> str:
        where = []
        if self.store is not None:
            where.append(f"store {self.store}")
        if self.level is not None:
            where.append(f"level {self.level}")
        if self.array is not None:
            where.append(f"array {self.array}")
        if self.chunk is not None:
            where.append(f"chunk {self.chunk}")
        if self.key is not None:
            where.append(f"file {self.key}")
        return f"{self.reason} ({', '.join(where)})" if where else self.reason

    def located(
        self,
        *,
        store: str | None = None,
        level: int | None = None,
        array: str | None = None,
        chunk: Sequence[int] | np.ndarray | str | None = None,
        key: str | None = None,
    ) -> Self:
        """Return a copy of this error (same class) with the missing location parts filled in."""
        return type(self)(
            self.reason,
            store=self.store if self.store is not None else store,
            level=self.level if self.level is not None else level,
            array=self.array if self.array is not None else array,
            chunk=self.chunk if self.chunk is not None else chunk,
            key=self.key if self.key is not None else key,
        )


class ZVUnsupportedDtypeError(ZVFormatError):
    """An attribute array declares a dtype the reader cannot decode (``object``: the writer
    stored memory addresses, not values; datetimes, ...). Readers leave such an attribute
    out with a :class:`ZVAttributeWarning` and read the rest of the store."""


class ZVFetchError(ZVFormatError):
    """The bytes of a key could not be fetched from a remote store, after retries.

    A subclass of :class:`ZVFormatError` so that a chunk whose fetch failed is handled like
    a chunk whose bytes are corrupt: the read leaves a gap and warns (or raises with
    ``strict=True``), naming store, level, array and chunk. Unlike a corrupt chunk, a
    failed fetch is never cached: the next read asks again.
    """


class ZVCancelledError(ZVError):
    """A read was cancelled (its ``cancel`` event was set) before all its fetches ran."""


class ZVChunkWarning(UserWarning):
    """A chunk could not be decoded and was skipped (the result has a gap there)."""


class ZVUnknownObjectWarning(UserWarning):
    """A read holds vertices whose object the store does not record: several objects name
    one fragment of a chunk whole (zarr-vectors 0.9.2 Draco chunks, 0.7-layout raw mesh
    chunks: :func:`~.objects.shared_fragments_cause` says which), so those vertices carry
    :data:`~.missing.OBJECT_UNKNOWN` as object id, and a read of some objects by id returns
    the shared fragments whole (other objects' vertices with them). The message names the
    store, level, array and a chunk, and which objects that chunk holds."""


class ZVAttributeWarning(UserWarning):
    """An attribute could not be read (see :class:`ZVUnsupportedDtypeError`) and was left
    out; the geometry and the other attributes read. The message names the attribute, its
    array, level and store."""


class ZVLeftoverWarning(UserWarning):
    """The folder opened is the leftover of a write that did not finish (a hidden
    ``.<name>.partial-<id>`` folder): it may hold only part of a store."""


class ZVListingWarning(UserWarning):
    """A store that cannot be listed (plain HTTP) hides some names from the reader, e.g.
    attribute names; the read goes on without them."""


def chunk_key(coords: Sequence[int] | np.ndarray) -> str:
    """Dot-joined signed chunk key, e.g. ``(-1, 0, 2)`` -> ``"-1.0.2"``."""
    return ".".join(str(int(c)) for c in coords)
