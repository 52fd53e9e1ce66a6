"""The QA report as one self-contained HTML file: tables, verdicts, pictures embedded.

:func:`render_html` turns a :class:`~.qa.QAResult` into a page with no outside resource:
the projection images are PNGs (:mod:`.png`) in ``data:`` URLs, the attribute histograms
inline SVG.
"""

from __future__ import annotations

import base64
import html
from typing import Any

import numpy as np

from .png import colour_counts, encode_png
from .qa import QAResult

#: the smallest width (CSS pixels) a projection image is shown at
IMAGE_WIDTH = 320

_STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 2em; color: #222; max-width: 80em; }
h1 { font-size: 1.4em; } h2 { font-size: 1.15em; margin-top: 2em; }
table { border-collapse: collapse; margin: .5em 0; }
th, td { border: 1px solid #ccc; padding: 3px 8px; text-align: right; vertical-align: top; }
th { background: #f3f3f3; } td.text { text-align: left; }
.pass { color: #176b2c; font-weight: 600; } .warn { color: #9a6700; font-weight: 600; }
.fail { color: #b3261e; font-weight: 600; }
.verdict { font-size: 1.2em; padding: .3em .8em; border: 2px solid; display: inline-block; }
figure { display: inline-block; margin: 0 1em 1em 0; vertical-align: top; }
figure img { image-rendering: pixelated; border: 1px solid #888; }
figcaption { font-size: .9em; max-width: 26em; }
svg { background: #fafafa; border: 1px solid #ddd; }
"""


def _e(value: Any) -> str:
    return html.escape(str(value))


def _num(value: Any) -> str:
    if value is None:
        return "–"
    if isinstance(value, float):
        return f"{value:.4g}"
    if isinstance(value, int):
        return f"{value:,}"
    return _e(value)


def _table(head: list[str], rows: list[list[str]]) -> str:
    """An HTML table; cells are HTML already (``<td class=text>`` for a cell starting
    with ``"\\t"``)."""
    out = ["<table><tr>", *(f"<th>{_e(h)}</th>" for h in head), "</tr>"]
    for row in rows:
        out.append("<tr>")
        for cell in row:
            if cell.startswith("\t"):
                out.append(f"<td class=text>{cell[1:]}</td>")
            else:
                out.append(f"<td>{cell}</td>")
        out.append("</tr>")
    out.append("</table>")
    return "".join(out)


def image_data_url(counts: np.ndarray, top: float | None = None) -> str:
    """A projection image (row 0 at the low end of its vertical axis) as a PNG data URL."""
    rgb = colour_counts(np.asarray(counts)[::-1], top)
    return "data:image/png;base64," + base64.b64encode(encode_png(rgb)).decode("ascii")


def _histogram_svg(
    edges: list[float], counts: list[int], width: int = 260, height: int = 90
) -> str:
    top = max(max(counts, default=0), 1)
    bar = width / max(len(counts), 1)
    bars = "".join(
        f'<rect x="{i * bar:.1f}" y="{height - 14 - (height - 20) * c / top:.1f}" '
        f'width="{max(bar - 1, 1):.1f}" height="{(height - 20) * c / top:.1f}" fill="#3b528b">'
        f"<title>{edges[i]:.4g} – {edges[i + 1]:.4g}: {c:,}</title></rect>"
        for i, c in enumerate(counts)
    )
    labels = (
        f'<text x="0" y="{height - 2}" font-size="10">{edges[0]:.4g}</text>'
        f'<text x="{width}" y="{height - 2}" font-size="10" text-anchor="end">{edges[-1]:.4g}</text>'
        f'<text x="{width}" y="10" font-size="10" text-anchor="end">max {top:,}</text>'
    )
    return f'<svg width="{width}" height="{height}" role="img">{bars}{labels}</svg>'


def render_html(result: QAResult) -> str:
    """The whole report as one HTML document."""
    r = result
    verdict = r.verdict
    counts = {s: sum(c.status == s for c in r.checks) for s in ("pass", "warn", "fail")}
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'>",
        f"<title>QA report: {_e(r.store)}</title><style>{_STYLE}</style></head><body>",
        f"<h1>Pyramid QA report: {_e(r.store)}</h1>",
        f"<p>{_e(r.geometry_type)} · axes {_e(', '.join(r.axes))} · units "
        f"{_e(', '.join(u or '–' for u in r.units))} · {len(r.levels)} level(s) · "
        f"scheduler {_e(r.scheduler)}</p>",
        f"<p class='verdict {verdict}'>verdict: {verdict.upper()}</p>",
        f"<p>{counts['pass']} check(s) pass, {counts['warn']} warn, {counts['fail']} fail.</p>",
        "<h2>Checks</h2>",
        _table(
            ["verdict", "level", "check", "detail"],
            [
                [
                    f"\t<span class={c.status}>{c.status.upper()}</span>",
                    _num(c.level),
                    "\t" + _e(c.name),
                    "\t" + _e(c.detail),
                ]
                for c in r.checks
            ],
        ),
        "<h2>Levels</h2>",
        _levels_table(r),
    ]
    if r.transitions:
        parts += [
            "<h2>Objects kept and dropped between levels</h2>",
            _table(
                ["fine", "coarse", "objects (fine)", "kept", "dropped", "dropped (first ids)"],
                [
                    [
                        _num(t["fine"]),
                        _num(t["coarse"]),
                        _num(t["fine_objects"]),
                        _num(t["kept"]),
                        _num(t["dropped"]),
                        "\t" + _e(", ".join(map(str, t["dropped_examples"])) or "–"),
                    ]
                    for t in r.transitions
                ],
            ),
        ]
    parts += _pictures(r)
    parts += _histograms(r)
    parts.append("<h2>Chunks that could not be read</h2>")
    if r.failures:
        parts.append(
            _table(
                ["level", "chunk", "error"],
                [[_num(f.level), "\t" + _e(f.chunk), "\t" + _e(f.error)] for f in r.failures],
            )
        )
    else:
        parts.append("<p>None: every chunk of every level was read.</p>")
    parts.append("</body></html>")
    return "\n".join(parts)


def _levels_table(r: QAResult) -> str:
    rows = []
    for lv in r.levels:
        links = "; ".join(
            f"{d}: {v['records']:,} ({v['unresolved']:,} unresolved)"
            for d, v in lv["links"].items()
        )
        kept = f"{lv['objects_kept']:,} / {lv['objects_total']:,}" if lv["objects_total"] else "–"
        rows.append(
            [
                _num(lv["level"]),
                _num(lv["vertices"]),
                _num(lv["vertices_read"]),
                kept,
                _num(lv["chunks"]),
                _num(lv["stored_bytes"]),
                "\t" + _e("×".join(f"{v:.3g}" for v in lv["bin_shape"])),
                "\t" + _e(lv["coarsening_method"]),
                _num(lv.get("coverage_of_level_0")),
                "\t" + _e(links or "–"),
            ]
        )
    head = [
        "level",
        "vertices (metadata)",
        "vertices read",
        "objects kept / total",
        "chunks",
        "stored bytes",
        "bin",
        "method",
        "coverage of level 0",
        "cross-level links",
    ]
    return _table(head, rows)


def _pictures(r: QAResult) -> list[str]:
    a, b = (r.axes[i] for i in r.grid.axes)
    base = min(r.images)
    scale = max(1, IMAGE_WIDTH // max(r.grid.shape[1], 1))
    width = r.grid.shape[1] * scale
    out = [
        "<h2>Coverage</h2>",
        f"<p>Vertices per pixel projected on {_e(a)} (across) and {_e(b)} (up), "
        f"{_e(r.grid.lo.tolist())} .. {_e(r.grid.hi.tolist())}, log scale, each level "
        f"beside level {base}.</p>",
    ]
    for lv in r.images:
        info = next(i for i in r.levels if i["level"] == lv)
        cover = info.get("coverage_of_level_0")
        cells = ""
        if lv != base:
            cells = f", {cover:.1%} of level {base}'s cells covered (cells of {info['coverage_cell']:.3g})"
        out.append("<div>")
        for shown in [base, lv] if lv != base else [base]:
            img = r.images[shown]
            out.append(
                f"<figure><img width={width} src='{image_data_url(img)}' "
                f"alt='level {shown} projection'><figcaption>level {shown}: "
                f"{int(img.sum()):,} vertices, {int(np.count_nonzero(img)):,} pixels occupied"
                f"{cells if shown == lv else ''}</figcaption></figure>"
            )
        out.append("</div>")
    return out


def _histograms(r: QAResult) -> list[str]:
    if not r.histograms:
        return ["<h2>Object attributes</h2><p>The store has no numeric object attributes.</p>"]
    out = ["<h2>Object attributes</h2>"]
    for name, h in r.histograms.items():
        out.append(f"<h3>{_e(name)}</h3><div>")
        for lv, counts in h["counts"].items():
            beyond = h["beyond"].get(lv, 0)
            note = f", {beyond:,} beyond level {min(h['counts'])}'s range" if beyond else ""
            out.append(
                f"<figure>{_histogram_svg(h['edges'], counts)}<figcaption>level {lv}: "
                f"{sum(counts):,} objects{note}</figcaption></figure>"
            )
        out.append("</div>")
    return out
