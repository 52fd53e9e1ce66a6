"""Layouts after zarr-vectors 0.9.2 (FORMAT-NEXT.md), against the ground truth of
``tests/data/next`` (a copy of ``shared/fixtures/next``)."""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import numpy as np
import pytest

import napari_zarr_vectors as nzv

NEXT_DIR = Path(__file__).parents[1] / "data" / "next"


@cache
def expected(name: str) -> dict:
    """Parsed ``next/expected/<name>.json`` (cached; read-only)."""
    return json.loads((NEXT_DIR / "expected" / f"{name}.json").read_text(encoding="utf-8"))


def _open(name: str) -> nzv.Store:
    return nzv.open_store(NEXT_DIR / f"{name}.zarrvectors")


def _f32(values) -> np.ndarray:
    return np.asarray(values, dtype=np.float64).astype(np.float32)


# -- required_capabilities (FORMAT-NEXT §5) ------------------------------------------------
def test_required_unknown_capability_is_refused_naming_it():
    truth = expected("required_unknown")["expected_behaviour"]
    assert truth["refuse"]
    with pytest.raises(nzv.UnsupportedCapabilityError) as info:
        _open("required_unknown")
    assert truth["unknown_capability"] in str(info.value)
    assert "required_unknown.zarrvectors" in str(info.value)
    assert info.value.capabilities == (truth["unknown_capability"],)
    # an UnsupportedVersionError: the napari loader treats it as fatal for the store
    assert isinstance(info.value, nzv.UnsupportedVersionError)


def test_implemented_capability_opens():
    store = _open("streamlines_additive")
    assert store.root.required_capabilities == ("additive_levels",)
