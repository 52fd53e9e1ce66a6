"""Mutation fuzz campaign over real ZV stores: the cases, the reads and the report.

Run it with ``python benchmarks/fuzz_stores.py --cases N --seed S [--jobs J] [--out report.json]``
(the command line over :func:`campaign`); ``tests/format/test_fuzz_campaign.py`` runs a short
campaign of this code.

Every case copies nothing: each worker keeps its own working copy of the stores of
fixture tree (``tests/data_paths.py``: every geometry type, the 0.7 and 0.9 layouts, the 0.9 edge cases, the dense
seed-002 ``dense`` stores and the later layouts of ``next``), mutates **one file** of one store,
opens the store and reads it the way a user does (every level: whole level, a box, object ids,
box + ids, group ids, object and group attributes, links, chunk list, parametric objects), then
restores the file's original bytes.

Mutations
---------
* chunk bytes (``c/...`` files and 0.9 shards): ``flip`` (1-8 random bit flips), ``truncate``
  (cut at a random length), ``zero`` (same length, all zero), ``grow`` (random bytes appended);
* ``zarr.json`` documents (root, levels, groups, arrays): one value anywhere in the document
  becomes a string, ``null``, negative, huge (``2**31``, ``2**62``, ``1e308``), a wrong
  container type (list <-> number, dict -> list), or one key is removed;
* the store's structure: a file is deleted (``delete``), two chunk files of one
  array are swapped (``swap``), a file becomes a ``symlink`` (to another file of the store, to
  itself, to nothing), a ``fifo`` or a link to a ``device`` (``/dev/zero``), an array's
  ``shape`` is inflated (x1000, x1,000,000, ``2**40``), or one ``index`` in a link, face or
  manifest payload (decoded through its codecs and encoded again) points out of range.

A case **escapes** when anything other than a :class:`~napari_zarr_vectors.format.ZVError`
leaves the reader (``ZVChunkWarning`` gaps are the expected outcome inside chunks); a case is
**slow** when it takes more than 2 s. Every read of a case is also compared with the same read
of the clean store (the **wrong-data oracle**): a case whose data differ while nothing was
announced (no ``ZVError``, no ``ZVChunkWarning``, ``ZVListingWarning`` or
``ZVLeftoverWarning``, no ``ZVAttributeWarning`` beyond those of the clean store) is a
**silent difference**. Silent differences of the kinds
:data:`UNDETECTABLE` lists (what the mutated file holds and how it was mutated: e.g. an attribute
value changed to another valid value) are counted apart: the store keeps no redundancy that
could reveal them; the others are **unexplained**. The report gives cases, outcomes, escapes
(with the first tracebacks), silent differences by array and mutation (with the reads that
differed), slow cases, the slowest case and peak memory (max RSS of the workers). The exit status
is non-zero when a case escaped, a silent difference is unexplained or a case is slow. A worker runs under an address-space
limit (``--memory-limit-gb``, default 6) so that a hostile size which tries to allocate more than
the bytes can hold fails loudly (as an escaped ``MemoryError``) instead of passing unnoticed on
an overcommitting kernel.
"""

from __future__ import annotations

import hashlib
import json
import multiprocessing as mp
import os
import re
import resource
import shutil
import signal
import sys
import tempfile
import time
import traceback
import warnings
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from data_paths import data_root

#: Seconds above which a case counts as slow.
SLOW_SECONDS = 2.0
#: A case still running after this many seconds is aborted and counted as hung (and escaped).
HANG_SECONDS = 60

CHUNK_MUTATIONS = ("flip", "truncate", "zero", "grow")
JSON_MUTATIONS = ("string", "null", "negative", "huge", "wrong_type", "remove_key")
STRUCT_MUTATIONS = ("delete", "swap", "symlink", "fifo", "device", "shape", "index")
#: Share of the cases that mutate the store's structure (the rest: bytes and JSON values).
STRUCT_SHARE = 0.3
HUGE_VALUES = (2**31, 2**62, 1e308, -(2**63), 10**30)
#: Stores the reader refuses whole by design (a required capability it lacks): no clean reads.
REFUSED = ("required_unknown.zarrvectors",)


def default_stores(data: Path | None = None) -> list[Path]:
    """Every real store the campaign mutates: one per geometry type and layout, plus edge cases
    (``data``: the fixture tree, by default :func:`data_paths.data_root`)."""
    if data is None:
        data = data_root()
    stores: list[Path] = []
    for sub in ("v07", "v09", "v09/edge-cases", "dense", "next"):
        folder = data / sub
        if folder.is_dir():
            stores += sorted(
                p for p in folder.glob("*.zarrvectors") if p.is_dir() and p.name not in REFUSED
            )
    return stores


# -- mutations -------------------------------------------------------------------------------
def mutate_bytes(raw: bytes, kind: str, rng: np.random.Generator) -> bytes:
    """One chunk-byte mutation: ``flip``, ``truncate``, ``zero`` or ``grow``."""
    if kind == "flip":
        if not raw:
            return b"\x01"
        buf = bytearray(raw)
        for _ in range(int(rng.integers(1, 9))):
            i = int(rng.integers(0, len(buf)))
            buf[i] ^= 1 << int(rng.integers(0, 8))
        return bytes(buf)
    if kind == "truncate":
        return raw[: int(rng.integers(0, max(len(raw), 1)))]
    if kind == "zero":
        return bytes(len(raw))
    if kind == "grow":
        extra = int(rng.choice([1, 4, 8, 64, 4096]))
        return raw + rng.integers(0, 256, extra, dtype=np.uint8).tobytes()
    raise ValueError(f"unknown chunk mutation {kind!r}")


def _json_sites(doc: Any, path: tuple = ()) -> list[tuple]:
    """Paths (tuples of keys / indices) of every node of a JSON document below its root."""
    sites = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            sites.append((*path, k))
            sites += _json_sites(v, (*path, k))
    elif isinstance(doc, list):
        for i, v in enumerate(doc[:16]):
            sites.append((*path, i))
            sites += _json_sites(v, (*path, i))
    return sites


def _replacement(value: Any, kind: str, rng: np.random.Generator) -> Any:
    if kind == "string":
        return str(value) if not isinstance(value, str) else "x" + value
    if kind == "null":
        return None
    if kind == "negative":
        if isinstance(value, bool):
            return -1
        if isinstance(value, int | float):
            return -abs(value) - 1
        if isinstance(value, list):
            return [-1] * max(len(value), 1)
        return -1
    if kind == "huge":
        h = HUGE_VALUES[int(rng.integers(0, len(HUGE_VALUES)))]
        if isinstance(value, list) and value:
            return [h] * len(value)
        return h
    if kind == "wrong_type":
        if isinstance(value, list):
            return 7
        if isinstance(value, dict):
            return [1, 2]
        if isinstance(value, str):
            return 3
        return [value, value]
    raise ValueError(f"unknown json mutation {kind!r}")


def mutate_json(raw: bytes, kind: str, rng: np.random.Generator) -> tuple[bytes, str]:
    """One ``zarr.json`` mutation; returns the new bytes and where it struck."""
    try:
        doc = json.loads(raw)
    except ValueError:
        return mutate_bytes(raw, "flip", rng), "unparsable"
    sites = _json_sites(doc)
    if not sites:
        return b"{}", "root"
    site = sites[int(rng.integers(0, len(sites)))]
    parent = doc
    for k in site[:-1]:
        parent = parent[k]
    last = site[-1]
    if kind == "remove_key" and isinstance(parent, dict) or kind == "remove_key":
        del parent[last]
    else:
        parent[last] = _replacement(parent[last], kind, rng)
    return json.dumps(doc).encode(), "/".join(str(s) for s in site)


def _array_doc(store: Path, rel: str) -> dict | None:
    """The ``zarr.json`` of the Zarr array holding the chunk file ``rel`` (nearest above it)."""
    parts = rel.split("/")
    for cut in range(len(parts) - 1, 0, -1):
        doc = store / "/".join(parts[:cut]) / "zarr.json"
        if doc.is_file():
            try:
                found = json.loads(doc.read_bytes())
            except ValueError:
                return None
            return found if found.get("node_type") == "array" else None
    return None


_BYTES_CODECS = ("zstd", "gzip", "blosc", "crc32c")


def _codec(c: dict) -> Any:
    import numcodecs
    from numcodecs.checksum32 import CRC32C

    name, cfg = c.get("name"), c.get("configuration") or {}
    if name == "zstd":
        return numcodecs.Zstd(level=int(cfg.get("level", 0)))
    if name == "gzip":
        return numcodecs.GZip(level=int(cfg.get("level", 1)))
    if name == "crc32c":
        return CRC32C()
    return numcodecs.Blosc(cname=cfg.get("cname", "lz4"), clevel=int(cfg.get("clevel", 5)))


def mutate_index(raw: bytes, doc: dict | None, rng: np.random.Generator) -> bytes | None:
    """``raw`` (a chunk file of ``doc``'s array) with one integer of its payload pointing out
    of range, encoded again with the array's codecs; ``None`` when the chunk cannot be
    decoded that way (sharded arrays, unknown codecs)."""
    if doc is None:
        return None
    codecs = [c if isinstance(c, dict) else {"name": c} for c in doc.get("codecs") or []]
    names = [c.get("name") for c in codecs]
    if (
        not names
        or names[0] not in ("bytes", "vlen-bytes")
        or any(n not in _BYTES_CODECS for n in names[1:])
    ):
        return None
    try:
        data = raw
        for c in reversed(codecs[1:]):
            data = bytes(_codec(c).decode(data))
        head = 8 if names[0] == "vlen-bytes" else 0  # one-element vlen: count, length
        dtype = np.dtype("<i4") if doc.get("data_type") == "int32" else np.dtype("<i8")
        body = np.frombuffer(
            data[head : head + (len(data) - head) // dtype.itemsize * dtype.itemsize], dtype
        ).copy()
        if body.size == 0:
            return None
        i = int(rng.integers(0, body.size))
        top = int(np.abs(body).max()) if body.size else 0
        body[i] = int(rng.choice([-2, -5, top + 1, top + 1000, np.iinfo(dtype).max // 2]))
        data = data[:head] + body.tobytes() + data[head + body.nbytes :]
        for c in codecs[1:]:
            data = bytes(_codec(c).encode(data))
        return data
    except Exception:  # noqa: BLE001 - a payload these codecs cannot round-trip
        return None


def inflate_shape(raw: bytes, rng: np.random.Generator) -> tuple[bytes, str] | None:
    """An array ``zarr.json`` whose ``shape`` is inflated (one axis or all: x1000,
    x1,000,000 or ``2**40``); ``None`` for documents without a shape."""
    try:
        doc = json.loads(raw)
    except ValueError:
        return None
    shape = doc.get("shape") if isinstance(doc, dict) else None
    if not isinstance(shape, list) or not shape or not all(isinstance(n, int) for n in shape):
        return None
    how = ["x1000", "x1000000", "2**40"][int(rng.integers(0, 3))]
    axes = [int(rng.integers(0, len(shape)))] if rng.random() < 0.5 else list(range(len(shape)))
    for a in axes:
        n = max(shape[a], 1)
        shape[a] = 2**40 if how == "2**40" else n * (1000 if how == "x1000" else 1_000_000)
    return json.dumps(doc).encode(), f"shape {how} axes {axes}"


def apply_structural(
    facts: StoreFacts, case: Case, rng: np.random.Generator
) -> list[tuple[Path, bytes]]:
    """Apply a structural mutation to the working copy; returns ``(path, original bytes)`` of
    every file it touched (for :func:`restore`)."""
    store = facts.path
    target = store / case.file
    original = target.read_bytes()
    touched = [(target, original)]
    kind = case.kind
    if kind == "shape":
        out = inflate_shape(original, rng)
        if out is None:
            kind = "delete"
        else:
            target.write_bytes(out[0])
            case.where = out[1]
            return touched
    if kind == "index":
        mutated = mutate_index(original, _array_doc(store, case.file), rng)
        if mutated is None:
            mutated = mutate_bytes(original, "flip", rng)
            case.where = "undecodable: flip"
        target.write_bytes(mutated)
        return touched
    if kind == "swap":
        family = _family(case.file)
        peers = [f for f in facts.chunk_files if _family(f) == family and f != case.file]
        if peers:
            other = store / peers[int(rng.integers(0, len(peers)))]
            theirs = other.read_bytes()
            touched.append((other, theirs))
            target.write_bytes(theirs)
            other.write_bytes(original)
            case.where = f"with {other.relative_to(store)}"
            return touched
        kind = "delete"
    target.unlink()
    if kind == "delete":
        return touched
    if kind == "fifo":
        os.mkfifo(target)
    elif kind == "device":
        os.symlink("/dev/zero", target)
    else:  # symlink: to another file of the store, to itself, or to nothing
        how = ["other", "self", "nothing"][int(rng.integers(0, 3))]
        pool = facts.chunk_files + facts.json_files
        dest = {
            "other": os.path.relpath(store / pool[int(rng.integers(0, len(pool)))], target.parent),
            "self": target.name,
            "nothing": target.name + ".gone",
        }[how]
        os.symlink(dest, target)
        case.where = how
    return touched


def _family(rel: str) -> str:
    """The logical array a chunk file belongs to: its path up to the Zarr chunk key, with 0.7
    chunk-key folders (``-1.2.0``) masked, e.g. ``0/vertices/*`` or ``0/vertices``."""
    parts = rel.split("/")
    parts = parts[: parts.index("c")] if "c" in parts else parts[:-1]
    return "/".join("*" if re.fullmatch(r"-?\d+(\.-?\d+)+", q) else q for q in parts)


def restore(touched: list[tuple[Path, bytes]]) -> None:
    """Put back the files a case touched (whatever now stands in their place)."""
    for path, raw in touched:
        if path.is_symlink() or path.exists():
            path.unlink()
        path.write_bytes(raw)


# -- the reads of one case -------------------------------------------------------------------
@dataclass
class StoreFacts:
    """What the campaign needs to know of an unmutated store (files, a box, ids)."""

    path: Path
    json_files: list[str]
    chunk_files: list[str]
    box: tuple[np.ndarray, np.ndarray]
    object_ids: dict[int, list[int]] = field(default_factory=dict)
    group_ids: list[int] = field(default_factory=list)
    #: digest of every read of :func:`exercise` on the clean store (the oracle's reference)
    clean: dict[str, str] = field(default_factory=dict)
    #: the attribute warnings the clean store gets (e.g. 0.9.2's ``object`` text): only a
    #: new one announces that a mutation cost an attribute
    clean_attribute_warnings: frozenset[str] = frozenset()


def store_facts(path: Path) -> StoreFacts:
    """Files of a store (relative keys) and, from a clean open, a middle box and a few ids."""
    from napari_zarr_vectors.format import open_store

    json_files, chunk_files = [], []
    for root, _dirs, files in os.walk(path):
        for f in files:
            rel = os.path.relpath(os.path.join(root, f), path).replace(os.sep, "/")
            (json_files if f == "zarr.json" else chunk_files).append(rel)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        s = open_store(path)
        lo, hi = s.bounds
        box = (lo + 0.25 * (hi - lo), lo + 0.75 * (hi - lo))
        ids = {lv.index: [int(i) for i in s.object_ids(lv.index)[:3]] for lv in s.levels}
        groups = sorted(s.groups(0))[:2]
    facts = StoreFacts(path, sorted(json_files), sorted(chunk_files), box, ids, groups)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        exercise(path, facts, facts.clean)
    facts.clean_attribute_warnings = frozenset(_attribute_warnings(caught))
    return facts


def _attribute_warnings(caught: list[warnings.WarningMessage]) -> list[str]:
    """The texts of the :class:`ZVAttributeWarning` s among ``caught``: an attribute left
    out, named with its store, level and array."""
    from napari_zarr_vectors.format import ZVAttributeWarning

    return [str(w.message) for w in caught if issubclass(w.category, ZVAttributeWarning)]


def digest(value: Any) -> str:
    """A fingerprint of what a read returned (arrays by dtype, shape and bytes; geometry,
    link sets and containers field by field), equal exactly when the data are."""
    h = hashlib.blake2b(digest_size=12)
    _feed(h, value)
    return h.hexdigest()


def _feed(h: Any, value: Any) -> None:
    if isinstance(value, np.ndarray):
        h.update(f"{value.dtype}{value.shape}".encode())
        if value.dtype.kind == "O":
            h.update(repr(value.tolist()).encode())
        else:
            h.update(np.ascontiguousarray(value).tobytes())
    elif isinstance(value, dict):
        for k in sorted(value, key=str):
            h.update(repr(k).encode())
            _feed(h, value[k])
    elif isinstance(value, list | tuple):
        h.update(f"[{len(value)}".encode())
        for v in value:
            _feed(h, v)
    elif hasattr(value, "positions") and hasattr(value, "paths"):  # a Geometry
        for name in (
            "positions",
            "edges",
            "faces",
            "paths",
            "path_object_ids",
            "vertex_object_ids",
            "vertex_attributes",
            "edge_attributes",
        ):
            _feed(h, getattr(value, name))
    elif hasattr(value, "rows") and hasattr(value, "chunks"):  # a LinkSet
        for name in ("chunks", "rows", "attributes"):
            _feed(h, getattr(value, name))
    else:
        h.update(repr(value).encode())


def exercise(
    path: Path, facts: StoreFacts, digests: dict[str, str] | None = None
) -> dict[str, int]:
    """Open ``path`` and read it like a user does; returns counts (for the test's checks) and,
    with ``digests``, records a :func:`digest` of every read in it (for the oracle)."""
    from napari_zarr_vectors.format import cross_level_segments, open_store

    counts: Counter = Counter()

    def rec(name: str, value: Any) -> Any:
        if digests is not None:
            digests[name] = digest(value)
        return value

    s = open_store(path)
    for lv in s.levels:
        level = lv.index
        counts["vertices"] += len(rec(f"L{level} read", s.read(level)).positions)
        box = rec(f"L{level} read bbox", s.read(level, bbox=facts.box))
        counts["box_vertices"] += len(box.positions)
        counts["chunks"] += len(rec(f"L{level} chunks", s.chunks(level)))
        rec(f"L{level} vertex attribute names", s.vertex_attribute_names(level))
        ids = facts.object_ids.get(level) or []
        if ids:
            by_id = rec(f"L{level} read ids", s.read(level, object_ids=ids))
            counts["id_vertices"] += len(by_id.positions)
            both = rec(f"L{level} read bbox+id", s.read(level, bbox=facts.box, object_ids=ids[:1]))
            counts["id_box_vertices"] += len(both.positions)
        if s.geometry_type in ("polyline", "streamline"):  # the viewer's first look
            pieces = s.read_pieces(
                level, s.chunks(level), fraction=0.5, bbox=facts.box, max_vertices=500
            )
            counts["piece_vertices"] += len(rec(f"L{level} pieces", pieces).positions)
        counts["objects"] += len(rec(f"L{level} object ids", s.object_ids(level)))
        rec(f"L{level} object presence", s.object_presence(level))
        rec(f"L{level} object attributes", s.object_attributes(level))
        rec(f"L{level} object attribute presence", s.object_attribute_presence(level))
        for delta in s.layout.link_deltas(level):
            counts["links"] += len(rec(f"L{level} links {delta}", s.links(level, delta)))
            if delta:  # what the pyramid QA draws of them
                seg = cross_level_segments(s, level, delta)
                rec(f"L{level} cross-level {delta}", [seg.fine, seg.coarse, seg.fine_object_ids])
    if facts.group_ids:
        groups = rec("read groups", s.read(0, group_ids=facts.group_ids))
        counts["group_vertices"] += len(groups.positions)
        both = rec("read bbox+group", s.read(0, bbox=facts.box, group_ids=facts.group_ids[:1]))
        counts["group_box_vertices"] += len(both.positions)
    counts["groups"] += len(rec("groups", s.groups(0)))
    rec("group names", s.group_names(0))
    rec("group attributes", s.group_attributes(0))
    counts["parametric"] += len(rec("parametric", s.parametric_objects))
    return dict(counts)


# -- cases -----------------------------------------------------------------------------------
@dataclass
class Case:
    """One mutation: which store, which file, how."""

    index: int
    store: int
    file: str
    kind: str
    where: str = ""

    def describe(self, stores: list[StoreFacts]) -> str:
        name = "/".join(stores[self.store].path.parts[-2:])
        where = f" at {self.where}" if self.where else ""
        return f"case {self.index}: {name}/{self.file} {self.kind}{where}"


def draw_case(index: int, seed: int, stores: list[StoreFacts]) -> tuple[Case, np.random.Generator]:
    """The case ``index`` of campaign ``seed`` (independent of every other case)."""
    rng = np.random.default_rng([seed, index])
    si = int(rng.integers(0, len(stores)))
    facts = stores[si]
    draw = rng.random()
    if draw < STRUCT_SHARE and facts.chunk_files:
        kind = STRUCT_MUTATIONS[int(rng.integers(0, len(STRUCT_MUTATIONS)))]
        if kind == "shape":
            pool = [f for f in facts.json_files if f.count("/") > 1] or facts.json_files
        elif kind in ("delete", "symlink"):
            pool = facts.chunk_files + facts.json_files
        elif kind == "index":  # payloads of indices: links, faces, manifests, groups
            keys = ("links/", "object_index/", "groups")
            pool = [f for f in facts.chunk_files if any(k in f for k in keys)]
            pool = pool or facts.chunk_files
        else:
            pool = facts.chunk_files
    elif draw < STRUCT_SHARE + (1 - STRUCT_SHARE) / 2 or not facts.chunk_files:
        # root and level documents are few but matter most: give them a fair share
        top = [f for f in facts.json_files if f.count("/") <= 2]
        pool = top if (rng.random() < 0.4 and top) else facts.json_files
        kind = JSON_MUTATIONS[int(rng.integers(0, len(JSON_MUTATIONS)))]
    else:
        pool = facts.chunk_files
        kind = CHUNK_MUTATIONS[int(rng.integers(0, len(CHUNK_MUTATIONS)))]
    return Case(index, si, pool[int(rng.integers(0, len(pool)))], kind), rng


def _alarm(signum: int, frame: Any) -> None:
    raise TimeoutError(f"case still running after {HANG_SECONDS} s")


@dataclass
class Result:
    """Outcome of one case."""

    case: str
    outcome: str  # "ok", "ok+gaps", "ZVFormatError", ..., "SILENT" or "ESCAPED <type>"
    seconds: float
    error: str = ""
    index: int = -1
    rss_growth_mb: float = 0.0  # how much this case raised the process's peak RSS


def run_case(index: int, seed: int, stores: list[StoreFacts]) -> Result:
    """Apply case ``index`` to the working copies, exercise the store, restore the files.

    ``SILENT``: a read returned other data than on the clean store and nothing announced it
    (no ``ZVError``, no warning of :func:`_announcing`, no attribute left out that the
    clean store keeps)."""
    from napari_zarr_vectors.format import ZVError

    announcing = _announcing()
    peak_before = _peak_rss_mb()
    case, rng = draw_case(index, seed, stores)
    facts = stores[case.store]
    if case.kind in STRUCT_MUTATIONS:
        touched = apply_structural(facts, case, rng)
    else:
        target = facts.path / case.file
        original = target.read_bytes()
        if case.kind in CHUNK_MUTATIONS:
            mutated = mutate_bytes(original, case.kind, rng)
        else:
            mutated, case.where = mutate_json(original, case.kind, rng)
        target.write_bytes(mutated)
        touched = [(target, original)]
    t0 = time.perf_counter()
    old = signal.signal(signal.SIGALRM, _alarm) if hasattr(signal, "SIGALRM") else None
    if old is not None:
        signal.alarm(HANG_SECONDS)
    digests: dict[str, str] = {}
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            exercise(facts.path, facts, digests)
        announced = any(issubclass(w.category, announcing) for w in caught) or bool(
            set(_attribute_warnings(caught)) - facts.clean_attribute_warnings
        )
        differs = sorted(
            k for k in facts.clean.keys() | digests.keys() if facts.clean.get(k) != digests.get(k)
        )
        if differs and not announced:
            outcome, error = "SILENT", "reads that differ: " + ", ".join(differs[:12])
        else:
            outcome, error = ("ok+gaps" if announced else "ok"), ""
    except ZVError as exc:
        outcome, error = type(exc).__name__, str(exc)[:300]
    except BaseException as exc:  # noqa: BLE001 - counting escapes is the point
        if isinstance(exc, KeyboardInterrupt):
            raise
        outcome = f"ESCAPED {type(exc).__name__}"
        error = "".join(traceback.format_exception(exc))[-3000:]
    finally:
        if old is not None:
            signal.alarm(0)
            signal.signal(signal.SIGALRM, old)
        restore(touched)
    seconds = time.perf_counter() - t0
    growth = _peak_rss_mb() - peak_before
    return Result(case.describe(stores), outcome, seconds, error, index, growth)


def _announcing() -> tuple[type[Warning], ...]:
    """The warnings that announce a gap or a doubt about the data read."""
    from napari_zarr_vectors.format import ZVChunkWarning, ZVLeftoverWarning, ZVListingWarning

    return (ZVChunkWarning, ZVListingWarning, ZVLeftoverWarning)


def prepare(work: Path, sources: list[Path]) -> list[StoreFacts]:
    """Copy ``sources`` into ``work`` and collect their facts."""
    facts = []
    for i, src in enumerate(sources):
        dst = work / f"{i:02d}_{src.parent.name}" / src.name
        if not dst.exists():
            shutil.copytree(src, dst)
        facts.append(store_facts(dst))
    return facts


@dataclass
class Report:
    """Aggregated results of a campaign."""

    cases: int = 0
    outcomes: Counter = field(default_factory=Counter)
    escaped: list[Result] = field(default_factory=list)
    #: cases whose data differ from the clean store's with nothing announcing it
    silent: list[Result] = field(default_factory=list)
    #: the silent cases not of a kind :data:`UNDETECTABLE` lists
    unexplained: list[Result] = field(default_factory=list)
    slow: list[Result] = field(default_factory=list)
    slowest: tuple[float, str] = (0.0, "")
    seconds: float = 0.0
    peak_rss_mb: float = 0.0
    #: the case that raised a worker's peak RSS the most (after the first few cases)
    biggest_growth: tuple[float, str] = (0.0, "")
    #: slow cases timed again alone after the campaign (``--recheck-slow``)
    rechecked: list[tuple[str, float]] = field(default_factory=list)

    def add(self, r: Result) -> None:
        self.cases += 1
        self.outcomes[r.outcome.split(" ")[0] if r.outcome.startswith("ESC") else r.outcome] += 1
        if r.outcome.startswith("ESCAPED"):
            self.escaped.append(r)
        if r.outcome == "SILENT":
            self.silent.append(r)
            if not _undetectable(r.case):
                self.unexplained.append(r)
        if r.seconds > SLOW_SECONDS:
            self.slow.append(r)
        if r.seconds > self.slowest[0]:
            self.slowest = (r.seconds, r.case)
        if self.cases > 20 and r.rss_growth_mb > self.biggest_growth[0]:
            self.biggest_growth = (r.rss_growth_mb, r.case)

    def merge(self, other: Report) -> None:
        self.cases += other.cases
        self.outcomes.update(other.outcomes)
        self.escaped += other.escaped
        self.silent += other.silent
        self.unexplained += other.unexplained
        self.slow += other.slow
        self.slowest = max(self.slowest, other.slowest)
        self.biggest_growth = max(self.biggest_growth, other.biggest_growth)
        self.peak_rss_mb = max(self.peak_rss_mb, other.peak_rss_mb)

    def as_dict(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "escaped": len(self.escaped),
            "silent_differences": len(self.silent),
            "slow_over_2s": len(self.slow),
            "slowest_seconds": round(self.slowest[0], 3),
            "slowest_case": self.slowest[1],
            "peak_rss_mb": round(self.peak_rss_mb, 1),
            "largest_rss_growth_mb": round(self.biggest_growth[0], 1),
            "largest_rss_growth_case": self.biggest_growth[1],
            "slow_on_recheck": sum(1 for _, t in self.rechecked if t > SLOW_SECONDS),
            "rechecked_slow_cases": [
                {"case": c, "seconds_alone": round(t, 2)} for c, t in self.rechecked[:50]
            ],
            "seconds": round(self.seconds, 1),
            "outcomes": dict(sorted(self.outcomes.items())),
            "escaped_cases": [
                {"case": r.case, "outcome": r.outcome, "error": r.error} for r in self.escaped[:50]
            ],
            "silent_by_array": dict(
                Counter(_array_kind(r.case) for r in self.silent).most_common()
            ),
            "silent_by_array_and_mutation": dict(
                Counter(
                    " / ".join(_array_kind_and_mutation(r.case)) for r in self.silent
                ).most_common()
            ),
            "silent_undetectable": len(self.silent) - len(self.unexplained),
            "silent_unexplained": len(self.unexplained),
            "unexplained_cases": [
                {"case": r.case, "reads": r.error} for r in self.unexplained[:100]
            ],
            "silent_cases": [{"case": r.case, "reads": r.error} for r in self.silent[:100]],
            "slow_cases": [
                {"case": r.case, "seconds": round(r.seconds, 2)} for r in self.slow[:50]
            ],
        }


#: Silent differences no reader can see, by what the mutated file holds and the mutation:
#: the store keeps no second copy of what changed, and the changed data is data a writer could
#: have written (the reader checks what it can: sizes, ranges, vertices inside their chunk).
UNDETECTABLE: dict[str, tuple[tuple[str, ...], str]] = {
    "attribute values": (
        ("flip", "zero", "swap", "symlink", "index", "delete"),
        "attribute values carry no checksum, range or copy: values that still decode to the "
        "right count are values the writer could have written; a chunk file deleted beside "
        "its array's zarr.json reads as the fill value, as Zarr defines a chunk a writer left "
        "unwritten because it held only that value",
    ),
    "vertices": (
        ("flip", "zero"),
        "a flipped bit that leaves every vertex inside its chunk is a position the writer could "
        "have written; zeroed bytes are vertices at the origin, which lie inside the chunk "
        "that holds the origin (any other chunk's zeros are reported)",
    ),
    "link records": (
        ("flip", "swap", "symlink", "index", "delete", "zero"),
        "records that still point at rows their chunks hold are records the writer could have "
        "written (a record carries no copy of its cell's key); a cell deleted from an array "
        "that lists no non-empty cells reads as empty, as Zarr defines an absent cell; zeroed "
        "records inside one chunk join its row 0 to itself, which the format allows (it "
        "forbids neither self-loops nor repeated face corners)",
    ),
    "fragment index": (
        ("flip", "symlink"),
        "a flipped bit in a range fragment's start or count that keeps the range inside its "
        "chunk is a fragment the writer could have written: fragments may share rows (the "
        "multi-owner index allows it), and the rows a fragment stops covering are then rows "
        "no fragment owns, which the format does not forbid (e.g. explicit_demo chunk 1.0.0, "
        "fragment 1's start 1 -> 0); a chunk's index replaced by another chunk's (a symlink) "
        "whose ranges fit the chunk is such an index too (an index records no chunk key; "
        "e.g. next/points_deferred chunk 3.3.3, seed 37 case 1109)",
    ),
    "object index": (
        ("index",),
        "an object id changed to another unused non-negative id is an id the writer could have "
        "chosen",
    ),
    "names": (
        ("swap", "delete", "flip"),
        "a name is free text (a flipped bit that still decodes is another name); a names "
        "chunk deleted reads as the fill value, empty names, which the reader replaces by "
        "the default names",
    ),
}


def _array_kind_and_mutation(case: str) -> tuple[str, str]:
    """What the mutated file of ``case`` holds and the mutation applied to it (an ``index``
    mutation of a chunk its codecs cannot round-trip flips bits instead: a ``flip``)."""
    if case.endswith(" index at undecodable: flip"):
        return _array_kind(case), "flip"
    return _array_kind(case), case.split(": ", 1)[-1].split(" ")[1]


#: Single cases beyond :data:`UNDETECTABLE`'s kinds (patterns of the case's description):
#: * a listing that omits a non-empty cell: ``nonempty_chunks`` is the list of an array's
#:   cells (what lets a store that cannot be listed be read); a listed cell that is missing
#:   is reported, an unlisted one is not read;
#: * metadata values whose change leaves a valid document: an optional key removed (group
#:   names), a name that stays a string (the ``string`` mutation prefixes ``x``);
#: * a 0.7 object-index manifest cell deleted (or exchanged with another object's) reads as
#:   an empty manifest (the fill value: an object absent from the level) or as another
#:   object's fragments;
#: * a dense ``groupings`` chunk deleted reads as the fill value (groups without members);
#:   exchanged with another, as other groups' member lists of objects the level holds; its
#:   ``shape`` grown adds rows of the fill value: more groups without members (a dense level
#:   records no group count besides the table); a 0.9 ``groups`` chunk alike (an empty
#:   member list is the fill value);
#: * a 0.7 ``vertices/0.0.0`` blob deleted reads as zeros (FORMAT07 rule 4): vertices at the
#:   origin, inside chunk ``0.0.0``, as zeroed bytes do.
#: * a flipped bit of a 0.9 ``object_ids`` chunk that gives another unused non-negative id
#:   (the object index's ``index`` reason: an id the writer could have chosen; a negative or
#:   repeated id is refused; seed 41 case 1759, ``edge-cases/poly_mc`` ids 0, 1 -> 0, 3).
UNDETECTABLE_CASES = tuple(
    re.compile(p)
    for p in (
        r" remove_key at attributes/nonempty_chunks/",
        r" remove_key at attributes/group_names$",
        r" string at attributes/(parametric_types|group_names)/",
        r"_v07/[^ ]+/object_index/manifests/c/0 (swap|delete)",
        r"_v07/[^ ]+/groups/data/c/0 (swap|delete)",
        r"_dense/[^ ]+/groupings/c/[0-9/]+ (swap|delete)",
        r"_dense/[^ ]+/groupings/zarr\.json shape",
        r"_(v09|edge-cases|next)/[^ ]+/groups/c/[0-9/]+ (swap|delete)",
        r"_v07/[^ ]+/vertices/0\.0\.0/c/0 (swap|delete)$",
        r"/object_index/object_ids/c/[0-9/]+ flip$",
    )
)


def _undetectable(case: str) -> bool:
    """Whether a silent difference of ``case`` is of a kind :data:`UNDETECTABLE` lists or one
    of :data:`UNDETECTABLE_CASES`."""
    kind, mutation = _array_kind_and_mutation(case)
    listed = any(p.search(case) for p in UNDETECTABLE_CASES)
    return mutation in UNDETECTABLE.get(kind, ((), ""))[0] or listed


def _array_kind(case: str) -> str:
    """What a case's mutated file holds, for the report (attribute values carry no redundancy:
    a changed value that stays valid cannot be told from the writer's)."""
    file = case.split(": ", 1)[-1].split(" ")[0]
    if "attributes/" in file and "zarr.json" not in file:
        return "attribute values"
    if "zarr.json" in file:
        return "metadata"
    for key, kind in (
        ("parametric/names/", "names"),
        ("links/", "link records"),
        ("object_index", "object index"),
        ("group", "group table"),
        ("vertex_fragments", "fragment index"),
        ("vertices", "vertices"),
    ):
        if key in file:
            return kind
    return "other"


def _peak_rss_mb() -> float:
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return rss / 1024.0 if sys.platform != "darwin" else rss / 2**20


def run_worker(
    indices: range | list[int],
    seed: int,
    sources: list[Path],
    work: Path,
    deadline: float | None = None,
    progress: Path | None = None,
) -> Report:
    """Run the cases ``indices`` in one process (own working copies under ``work``)."""
    stores = prepare(work, sources)
    report = Report()
    t0 = time.perf_counter()
    for n, index in enumerate(indices):
        if deadline is not None and time.time() > deadline:
            break
        report.add(run_case(index, seed, stores))
        if progress is not None and n % 500 == 499:
            report.seconds = time.perf_counter() - t0
            report.peak_rss_mb = _peak_rss_mb()
            progress.write_text(json.dumps(report.as_dict(), indent=1))
    report.seconds = time.perf_counter() - t0
    report.peak_rss_mb = _peak_rss_mb()
    return report


def _worker_main(args: tuple) -> Report:
    indices, seed, sources, work, deadline, progress, mem_gb = args
    if mem_gb:
        limit = int(mem_gb * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    return run_worker(indices, seed, sources, work, deadline, progress)


def campaign(
    cases: int,
    seed: int = 0,
    jobs: int = 1,
    sources: list[Path] | None = None,
    work: Path | None = None,
    time_limit: float | None = None,
    memory_limit_gb: float | None = 6.0,
    progress_dir: Path | None = None,
) -> Report:
    """Run ``cases`` cases of campaign ``seed`` over ``sources`` with ``jobs`` processes."""
    sources = default_stores() if sources is None else sources
    own = work is None
    work = Path(tempfile.mkdtemp(prefix="zv_fuzz_")) if work is None else work
    deadline = None if time_limit is None else time.time() + time_limit
    t0 = time.perf_counter()
    try:
        if jobs <= 1:
            report = run_worker(range(cases), seed, sources, work / "w0", deadline)
        else:
            tasks = [
                (
                    list(range(j, cases, jobs)),
                    seed,
                    sources,
                    work / f"w{j}",
                    deadline,
                    None if progress_dir is None else progress_dir / f"progress_w{j}.json",
                    memory_limit_gb,
                )
                for j in range(jobs)
            ]
            with mp.get_context("fork").Pool(jobs) as pool:
                parts = pool.map(_worker_main, tasks)
            report = Report()
            for part in parts:
                report.merge(part)
    finally:
        if own:
            shutil.rmtree(work, ignore_errors=True)
    report.seconds = time.perf_counter() - t0
    return report
