"""Store wrappers for tests that count what a read fetches."""

from __future__ import annotations

from zarr.storage import WrapperStore


class CountingStore(WrapperStore):
    """Records every key that ``get`` found (probes of absent keys read no blob)."""

    def __init__(self, store) -> None:
        super().__init__(store)
        self.keys: list[str] = []

    async def get(self, key, prototype=None, byte_range=None):
        value = await self._store.get(key, prototype, byte_range)
        if value is not None:
            self.keys.append(key)
        return value

    def chunk_keys(self, level: int, array: str) -> set[str]:
        """Chunk keys of ``level/array`` whose payload was read."""
        prefix = f"{level}/{array}/"
        return {
            k[len(prefix) :].split("/")[0]
            for k in self.keys
            if k.startswith(prefix) and k.endswith("/c/0")
        }
