"""The blobs of a 0.7 store: one tiny ``uint8`` Zarr array per spatial chunk and logical
array (FORMAT07 §1), its ``zarr.json`` and one chunk file ``c/0``, read without zarr."""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from ..codecs import decode_blob
from ..errors import ZVFetchError, ZVFormatError
from ..io import StoreIO
from ..validate import Source

#: Blob ``zarr.json`` documents kept from probing an unlistable level, so that reading the
#: chunks found does not fetch them again.
MAX_PROBED_META = 1 << 16


class V07Blobs:
    """Reads the payloads of a 0.7 store's blob arrays, keeping the ``zarr.json`` documents
    a probe of an unlistable level fetched (:meth:`remember`)."""

    def __init__(self, io: StoreIO) -> None:
        self.io = io
        self._lock = threading.Lock()
        self._probed: OrderedDict[str, bytes] = OrderedDict()  # blob prefix -> zarr.json

    def remember(self, probed: dict[str, bytes]) -> None:
        """Keep the ``zarr.json`` bytes a probe fetched (blob prefix -> bytes; the
        :data:`MAX_PROBED_META` most recent)."""
        with self._lock:
            self._probed.update(probed)
            while len(self._probed) > MAX_PROBED_META:
                self._probed.popitem(last=False)

    def _decode(
        self, meta_raw: bytes | None, data_raw: bytes | None, where: str, fill_ok: bool = True
    ) -> bytes | None:
        """Payload of one blob array from its ``zarr.json`` and ``c/0`` bytes. Without
        ``fill_ok``, a missing ``c/0`` (zarr's elision of an all-zero chunk) is an error: the
        zeros would be data no writer stores there."""
        if meta_raw is None:
            return None
        meta = self.io.parse_json(meta_raw, where)
        payload = decode_blob(meta, data_raw, Source(None, where))
        if data_raw is None and payload and not fill_ok:
            raise ZVFormatError(
                f"the chunk file is missing: {where}/zarr.json declares {len(payload)} bytes, "
                "and all-zero bytes (what a missing file stands for) cannot be this array's "
                "data here",
                key=f"{where}/c/0",
            )
        return payload

    def read_many(
        self, prefixes: Sequence[str], fill_ok: Sequence[bool] | None = None
    ) -> list[bytes | ZVFormatError | None]:
        """Payloads of several blob arrays, fetched concurrently (``zarr.json`` + ``c/0``
        each; a ``zarr.json`` kept from probing is not fetched again). ``fill_ok[i]``:
        whether a missing ``c/0`` may stand for zeros (default: always)."""
        with self._lock:
            metas = [self._probed.get(p) for p in prefixes]
        keys: list[str] = []
        for p, meta in zip(prefixes, metas, strict=True):
            if meta is None:
                keys.append(f"{p}/zarr.json")
            keys.append(f"{p}/c/0")
        raw = iter(self.io.fetch_many(keys))
        out: list[bytes | ZVFormatError | None] = []
        fills = [True] * len(prefixes) if fill_ok is None else fill_ok
        for p, meta, ok in zip(prefixes, metas, fills, strict=True):
            meta_raw = meta if meta is not None else next(raw)
            data_raw = next(raw)
            if isinstance(meta_raw, ZVFetchError):
                out.append(meta_raw)
            elif isinstance(data_raw, ZVFetchError) and meta_raw is not None:
                out.append(data_raw)
            elif meta_raw is None and data_raw is not None:  # bytes of an array that is gone
                out.append(ZVFormatError(f"{p}/zarr.json is missing beside its chunk file"))
            else:
                try:
                    out.append(self._decode(meta_raw, data_raw, p, ok))  # type: ignore[arg-type]
                except ZVFormatError as exc:
                    out.append(exc)
        return out

    def read(
        self, prefix: str, level: int | None = None, array: str | None = None, fill_ok: bool = True
    ) -> bytes | None:
        res = self.read_many([prefix], [fill_ok])[0]
        if isinstance(res, ZVFormatError):
            raise res.located(store=self.io.name, level=level, array=array or prefix)
        return res
