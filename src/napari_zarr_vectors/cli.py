"""The command line, ``napari-zarr-vectors`` (also ``python -m napari_zarr_vectors``).

Commands (``napari-zarr-vectors COMMAND --help`` for their options)::

    info STORE [--json]                                  what a store holds
    qa STORE --report report.html [--json out.json]     the whole-store QA report
    density STORE OUT.nii.gz --voxel 2                  a density image (NIfTI or .zarr)
    export STORE TARGET [--ids 3 7 ...]                 objects into a new store

Every job takes ``--scheduler`` (``threads``, ``sync``, ``local:N``, ``tcp://host:port``)
and shows a progress bar on stderr (``--quiet``: none). Exit codes (:data:`EXIT`): 0 done,
1 the QA verdict reached ``--fail-on``, 2 bad arguments, 3 a store that cannot be opened
or read, 4 a missing optional dependency, 130 interrupted. No napari import.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import __version__
from .format import pyramid
from .format.distinct import distinct
from .format.errors import MissingDependencyError, ZVCancelledError, ZVChunkWarning, ZVError
from .format.store import Store, open_store
from .jobs.density import density_map
from .jobs.export import export_job
from .jobs.qa import plain, qa_report
from .jobs.report import render_html
from .jobs.runner import check_scheduler
from .write.engine import SameStoreError, TargetExistsError

#: exit codes
EXIT = {"ok": 0, "verdict": 1, "usage": 2, "store": 3, "dependency": 4, "interrupted": 130}


class UsageError(Exception):
    """Bad arguments found after parsing (exit code 2)."""


# --------------------------------------------------------------------------------------------
# progress
# --------------------------------------------------------------------------------------------


class ProgressBar:
    """A job's ``progress`` callable drawing a tqdm bar on stderr (a line per step when
    tqdm is missing); ``quiet`` draws nothing."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self._bar: Any = None
        self._lock = threading.Lock()

    def __call__(self, done: int, total: int, text: str) -> None:
        if self.quiet:
            return
        with self._lock:
            if self._bar is None:
                try:
                    from tqdm import tqdm
                except ImportError:
                    print(f"{text}: {done}/{total}", file=sys.stderr)
                    return
                self._bar = tqdm(total=total, desc=text, unit="task", file=sys.stderr)
            self._bar.total = total
            self._bar.n = done
            self._bar.set_description(text, refresh=False)
            self._bar.refresh()

    def close(self) -> None:
        if self._bar is not None:
            self._bar.close()
            self._bar = None


# --------------------------------------------------------------------------------------------
# commands
# --------------------------------------------------------------------------------------------


def _open(location: str) -> Store:
    path = Path(location)
    if "://" not in location and not path.exists():
        raise ZVError(f"{location}: no such store (the path does not exist)")
    return open_store(location)


def store_info(store: Store) -> dict[str, Any]:
    """What ``info`` prints: geometry, levels and their counts, bounds, units, placement,
    layout features."""
    placement = store.placement
    levels = []
    for row in pyramid.level_statistics(store):
        lv = row["level"]
        row["refinement"] = store.level(lv).refinement
        row["cross_level_deltas"] = pyramid.cross_level_deltas(store, lv)
        levels.append(row)
    return {
        "store": store.path,
        "zv_version": store.zv_version,
        "layout": store.generation,
        "geometry_type": store.geometry_type,
        "geometry_types": store.geometry_types,
        "axes": store.axes,
        "axis_types": store.axis_types,
        "units": store.units,
        "bounds": [np.asarray(b, float).tolist() for b in store.bounds],
        "chunk_shape": np.asarray(store.chunk_shape, float).tolist(),
        "placement": {
            "source": placement.source,
            "space": placement.space,
            "exact": placement.exact,
            "affine": placement.affine.tolist(),
        },
        "features": {
            "format_capabilities": list(store.root.format_capabilities),
            "required_capabilities": list(store.root.required_capabilities),
            "links_convention": store.root.links_convention,
        },
        "object_attributes": sorted(store.layout.read_object_attributes(0)),
        "vertex_attributes": store.vertex_attribute_names(0),
        "groups": len(store.groups(0)),
        "levels": levels,
    }


def _print_info(info: dict[str, Any]) -> None:
    units = ", ".join(
        f"{a} ({u or '–'}, {t})"
        for a, u, t in zip(info["axes"], info["units"], info["axis_types"], strict=True)
    )
    lo, hi = info["bounds"]
    p = info["placement"]
    lines = [
        f"store      {info['store']}",
        f"format     ZV {info['zv_version']} ({info['layout']} layout)",
        f"geometry   {', '.join(info['geometry_types'])}",
        f"axes       {units}",
        f"bounds     {lo} .. {hi}",
        f"chunks     {info['chunk_shape']}",
        f"placement  {p['source']}{' in ' + p['space'] if p['space'] else ''}"
        + ("" if p["exact"] else " (best effort)"),
    ]
    if p["source"] != "identity":
        lines += [f"           {row}" for row in p["affine"]]
    f = info["features"]
    lines.append(
        f"features   capabilities {f['format_capabilities'] or '–'}; required "
        f"{f['required_capabilities'] or '–'}; links {f['links_convention']}"
    )
    lines.append(
        f"attributes objects {info['object_attributes'] or '–'}; "
        f"vertices {info['vertex_attributes'] or '–'}; groups {info['groups']:,}"
    )
    lines.append("")
    lines.append(
        "level  vertices     objects kept / total  chunks  bin            method      links"
    )
    for row in info["levels"]:
        vertices = "?" if row["vertices"] is None else f"{row['vertices']:,}"
        objects = (
            f"{row['objects_kept']:,} / {row['objects_total']:,}" if row["objects_total"] else "–"
        )
        bins = "×".join(f"{v:.3g}" for v in row["bin_shape"])
        links = ", ".join(f"{d:+d}" for d in row["cross_level_deltas"]) or "–"
        extra = " (additive)" if row["refinement"] == "add" else ""
        lines.append(
            f"{row['level']:<6} {vertices:<12} {objects:<21} {row['chunks']:<7,} {bins:<14} "
            f"{str(row['coarsening_method']) + extra:<11} {links}"
        )
    print("\n".join(lines))


def cmd_info(args: argparse.Namespace, progress: ProgressBar) -> int:
    info = store_info(_open(args.store))
    if args.json:
        print(json.dumps(plain(info), indent=1))
    else:
        _print_info(info)
    return EXIT["ok"]


def cmd_qa(args: argparse.Namespace, progress: ProgressBar) -> int:
    if args.report is None and args.json is None:
        raise UsageError("qa needs --report report.html and/or --json out.json")
    for target in (args.report, args.json):
        if target is not None and not Path(target).parent.is_dir():
            raise UsageError(f"{target}: its folder does not exist")
    store = _open(args.store)
    result = qa_report(
        store, scheduler=args.scheduler, progress=progress, block_chunks=args.block_chunks
    )
    progress.close()
    if args.report is not None:
        Path(args.report).write_text(render_html(result), encoding="utf-8")
    if args.json is not None:
        Path(args.json).write_text(json.dumps(result.to_json(), indent=1), encoding="utf-8")
    counts = {s: sum(c.status == s for c in result.checks) for s in ("pass", "warn", "fail")}
    print(
        f"{store.name}: verdict {result.verdict.upper()} ({counts['pass']} pass, "
        f"{counts['warn']} warn, {counts['fail']} fail; {len(result.failures)} chunk(s) "
        "unreadable)"
    )
    for check in result.checks:
        if check.status != "pass":
            level = "" if check.level is None else f"level {check.level}: "
            print(f"  {check.status.upper():4} {level}{check.name}: {check.detail}")
    fail_on = {"fail": ("fail",), "warn": ("warn", "fail"), "never": ()}[args.fail_on]
    return EXIT["verdict"] if result.verdict in fail_on else EXIT["ok"]


def cmd_density(args: argparse.Namespace, progress: ProgressBar) -> int:
    out = str(args.out)
    if not out.endswith((".nii", ".nii.gz", ".zarr")):
        raise UsageError(f"{out}: write a NIfTI (.nii, .nii.gz) or a Zarr array (.zarr)")
    if os.path.exists(out):
        raise UsageError(f"{out} exists: density never writes over a file")
    if not Path(out).parent.is_dir():
        raise UsageError(f"{out}: its folder does not exist")
    voxel = args.voxel[0] if len(args.voxel) == 1 else list(args.voxel)
    store = _open(args.store)
    try:
        result = density_map(
            store,
            voxel,
            level=args.level,
            count=args.count,
            scheduler=args.scheduler,
            progress=progress,
            block_chunks=args.block_chunks,
        )
    except (ValueError, KeyError) as exc:
        raise UsageError(str(exc).strip("'\"")) from None
    progress.close()
    if out.endswith(".zarr"):
        _write_zarr(out, result, store)
    else:
        _write_nifti(out, result)
    failed = f"; {len(result.failures)} chunk(s) unreadable" if result.failures else ""
    print(
        f"{out}: {result.image.shape} voxels of {args.voxel}, {result.count} per voxel up to "
        f"{int(result.image.max(initial=0)):,} (level {result.level}"
        f"{', ' + result.space if result.space else ''}){failed}"
    )
    for f in result.failures:
        print(f"  level {f.level} chunk {f.chunk}: {f.error}", file=sys.stderr)
    return EXIT["ok"]


def _write_nifti(out: str, result: Any) -> None:
    try:
        import nibabel as nib
    except ImportError as exc:
        raise MissingDependencyError(
            "a NIfTI density map needs nibabel: pip install 'napari-zarr-vectors[jobs]' "
            "(or write OUT.zarr)"
        ) from exc
    image = result.image
    affine = result.affine
    if image.ndim == 2:  # a 2-D store: one slice
        image = image[..., None]
        full = np.eye(4)
        full[:2, :2], full[:2, 3] = affine[:2, :2], affine[:2, 2]
        affine = full
    nifti = nib.Nifti1Image(image, affine)
    nifti.header.set_xyzt_units("mm" if result.space == "RASmm" else "unknown")
    nib.save(nifti, out)


def _write_zarr(out: str, result: Any, store: Store) -> None:
    import zarr

    array = zarr.create_array(out, data=result.image, zarr_format=3)
    array.attrs.update(
        {
            "affine": result.affine.tolist(),
            "count": result.count,
            "level": result.level,
            "space": result.space,
            "source": store.path,
            "axes": store.axes,
        }
    )


def cmd_export(args: argparse.Namespace, progress: ProgressBar) -> int:
    ids = parse_ids(args.ids) if args.ids else None
    store = _open(args.store)
    try:
        written = export_job(store, args.target, ids, scheduler=args.scheduler, progress=progress)
    except (ValueError, TargetExistsError, SameStoreError) as exc:
        raise UsageError(str(exc)) from None
    progress.close()
    what = "every object" if ids is None else f"{len(ids):,} object id(s)"
    print(f"{written}: {what} of {store.name}")
    return EXIT["ok"]


def parse_ids(values: Sequence[str]) -> np.ndarray:
    """``["3", "7,9", "@ids.txt"]`` -> sorted unique int64 ids (a file holds ids separated by
    commas, spaces or lines)."""
    words: list[str] = []
    for value in values:
        if value.startswith("@"):
            try:
                value = Path(value[1:]).read_text(encoding="utf-8")
            except OSError as exc:
                raise UsageError(f"--ids {value}: {exc.strerror}") from None
        words += value.replace(",", " ").split()
    try:
        ids = np.array([int(w) for w in words], np.int64)
    except ValueError:
        bad = next(w for w in words if not w.lstrip("-").isdigit())
        raise UsageError(f"--ids: {bad!r} is not an object id") from None
    if not ids.size:
        raise UsageError("--ids names no object")
    return distinct(ids)


# --------------------------------------------------------------------------------------------
# the parser
# --------------------------------------------------------------------------------------------


def _positive(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None
    if value < 1:
        raise argparse.ArgumentTypeError(f"{value} is not a positive number")
    return value


def _size(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not np.isfinite(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"{text} is not a positive size")
    return value


def _job_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--scheduler",
        default=None,
        help="threads (default), sync (serial), local:N (a LocalCluster of N worker "
        "processes), or a dask.distributed scheduler address tcp://host:port",
    )
    parser.add_argument(
        "--block-chunks",
        type=_positive,
        default=8,
        help="chunks per task (a task's memory is about this many decoded chunks; default 8)",
    )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="napari-zarr-vectors",
        description="Whole-store work on Zarr Vectors stores, without napari.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    p = sub.add_parser("info", help="what a store holds: geometry, levels, counts, placement")
    p.add_argument("store")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(run=cmd_info)

    p = sub.add_parser("qa", help="the whole-store QA report (HTML, JSON)")
    p.add_argument("store")
    p.add_argument("--report", help="write the HTML report here")
    p.add_argument("--json", help="write the report's numbers as JSON here")
    p.add_argument(
        "--fail-on",
        choices=("fail", "warn", "never"),
        default="fail",
        help="exit with 1 when the verdict is this or worse (default: fail)",
    )
    _job_options(p)
    p.set_defaults(run=cmd_qa)

    p = sub.add_parser("density", help="a track or point density image in world placement")
    p.add_argument("store")
    p.add_argument("out", help="OUT.nii, OUT.nii.gz or OUT.zarr")
    p.add_argument(
        "--voxel", type=_size, nargs="+", required=True, help="voxel edge (one, or one per axis)"
    )
    p.add_argument("--level", type=int, default=0)
    p.add_argument(
        "--count",
        choices=("auto", "objects", "vertices"),
        default="auto",
        help="objects (tracks) or vertices per voxel (auto: objects when the store has them)",
    )
    _job_options(p)
    p.set_defaults(run=cmd_density)

    p = sub.add_parser("export", help="objects of a store into a new store")
    p.add_argument("store")
    p.add_argument("target")
    p.add_argument(
        "--ids", nargs="+", help="object ids (3 7 9, 3,7,9, or @file); default: every object"
    )
    _job_options(p)
    p.set_defaults(run=cmd_export)
    return parser


def _check_scheduler(args: argparse.Namespace) -> None:
    try:
        check_scheduler(getattr(args, "scheduler", None))
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    progress = ProgressBar(args.quiet)
    run: Callable[[argparse.Namespace, ProgressBar], int] = args.run
    with warnings.catch_warnings():
        # chunks that cannot be read are reported by the jobs, by key
        warnings.simplefilter("ignore", ZVChunkWarning)
        try:
            _check_scheduler(args)
            return run(args, progress)
        except UsageError as exc:
            print(f"{parser.prog} {args.command}: error: {exc}", file=sys.stderr)
            return EXIT["usage"]
        except MissingDependencyError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT["dependency"]
        except (ZVCancelledError, KeyboardInterrupt):
            print("interrupted", file=sys.stderr)
            return EXIT["interrupted"]
        except (ZVError, OSError) as exc:
            print(f"error: {exc}", file=sys.stderr)
            return EXIT["store"]
        finally:
            progress.close()
