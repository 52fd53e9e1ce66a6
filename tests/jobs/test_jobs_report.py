"""The HTML report: self-contained, its numbers and verdicts those of the job, its pictures
the projection images (read back by Pillow)."""

from __future__ import annotations

import base64
import io
import re
import warnings

import numpy as np
import pytest

import napari_zarr_vectors as nzv
from napari_zarr_vectors.jobs import qa_report
from napari_zarr_vectors.jobs.png import EMPTY, colour_counts, encode_png
from napari_zarr_vectors.jobs.report import render_html

Image = pytest.importorskip("PIL.Image")


def _pngs(page: str) -> list[np.ndarray]:
    found = re.findall(r"data:image/png;base64,([A-Za-z0-9+/=]+)", page)
    return [np.asarray(Image.open(io.BytesIO(base64.b64decode(b))).convert("RGB")) for b in found]


def test_png_round_trips_through_pillow():
    counts = np.arange(12, dtype=np.int64).reshape(3, 4)
    rgb = colour_counts(counts)
    assert tuple(rgb[0, 0]) == EMPTY and tuple(rgb[2, 3]) == (253, 231, 37)
    back = np.asarray(Image.open(io.BytesIO(encode_png(rgb))))
    np.testing.assert_array_equal(back, rgb)


@pytest.fixture(scope="module")
def tracks300_report(tracks300_store):
    result = qa_report(nzv.open_store(tracks300_store[0]))
    return result, render_html(result)


def test_the_page_is_self_contained(tracks300_report):
    _, page = tracks300_report
    assert page.startswith("<!DOCTYPE html>")
    assert not re.search(r"""(src|href)=["']?(https?:|//|file:)""", page)
    assert "<script" not in page


def test_the_page_shows_the_numbers_and_verdicts(tracks300_report):
    result, page = tracks300_report
    assert "verdict: PASS" in page
    assert "14,576" in page and ">81<" in page  # vertices of levels 0 and 1
    assert "300 / 300" in page  # objects kept / total
    assert "+1: 14,576 (0 unresolved)" in page
    for check in result.checks:
        assert check.detail.replace("'", "&#x27;") in page
    assert page.count("<span class=pass>PASS</span>") == len(result.checks)
    assert "length_mm" in page and "level 1: 300 objects" in page
    assert "None: every chunk of every level was read." in page


def test_the_pictures_are_the_projection_images(tracks300_report):
    result, page = tracks300_report
    pictures = _pngs(page)
    # level 0, then level 1 beside level 0
    assert len(pictures) == 3
    for picture, level in zip(pictures, [0, 0, 1], strict=True):
        image = result.images[level]
        assert picture.shape[:2] == image.shape
        occupied = np.any(picture != np.array(EMPTY, np.uint8), axis=2)
        np.testing.assert_array_equal(occupied, image[::-1] > 0)  # north up


def test_a_damaged_store_names_its_chunk(damaged):
    path, key, _ = damaged
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        page = render_html(qa_report(nzv.open_store(path)))
    assert "verdict: FAIL" in page
    assert f"1 chunk(s) could not be read: {key}" in page
    assert f"<td class=text>{key}</td>" in page  # the table of unreadable chunks
