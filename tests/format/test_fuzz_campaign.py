"""A short, deterministic run of the mutation fuzz campaign (``tests/fuzz_campaign.py``, the
code ``benchmarks/fuzz_stores.py`` runs from the command line). Every case must end in data or
in one of the project's errors: no other exception escapes.
"""

from __future__ import annotations

import json
from collections import Counter

import numpy as np
import pytest

import fuzz_campaign as fz
from data_paths import data_root

CASES = 240
SEED = 20261124


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    return fz.campaign(CASES, SEED, jobs=1, work=tmp_path_factory.mktemp("fuzz"))


def test_short_campaign_has_no_escapes(campaign) -> None:
    escaped = "\n\n".join(f"{r.case}: {r.outcome}\n{r.error}" for r in campaign.escaped)
    assert campaign.cases == CASES
    assert not campaign.escaped, escaped


def test_short_campaign_exercises_both_outcomes(campaign) -> None:
    """Corruptions are caught (project errors or gaps) and many cases still read data."""
    o = campaign.outcomes
    assert sum(o.values()) == CASES
    assert o["ZVFormatError"] > 0 and o["ok+gaps"] > 0 and o["ok"] > 0


def test_cases_are_deterministic_and_cover_every_store() -> None:
    stores = [
        fz.StoreFacts(p, ["zarr.json"], ["c/0"], (np.zeros(3), np.ones(3)))
        for p in fz.default_stores()
    ]
    draws = [fz.draw_case(i, SEED, stores)[0] for i in range(2000)]
    again = [fz.draw_case(i, SEED, stores)[0] for i in range(2000)]
    assert [(c.store, c.file, c.kind) for c in draws] == [(c.store, c.file, c.kind) for c in again]
    assert {c.store for c in draws} == set(range(len(stores)))
    kinds = Counter(c.kind for c in draws)
    assert set(kinds) == set(fz.CHUNK_MUTATIONS) | set(fz.JSON_MUTATIONS) | set(fz.STRUCT_MUTATIONS)
    layouts = {p.parent.name for p in fz.default_stores()}
    assert {"v07", "v09", "dense"} <= layouts


def test_mutations_change_the_bytes() -> None:
    rng = np.random.default_rng(0)
    raw = bytes(range(256)) * 4
    assert fz.mutate_bytes(raw, "zero", rng) == bytes(len(raw))
    assert len(fz.mutate_bytes(raw, "truncate", rng)) < len(raw)
    grown = fz.mutate_bytes(raw, "grow", rng)
    assert grown[: len(raw)] == raw and len(grown) > len(raw)
    flipped = fz.mutate_bytes(raw, "flip", rng)
    assert len(flipped) == len(raw) and flipped != raw
    doc = {"attributes": {"zarr_vectors_level": {"vertex_count": 12}}}
    for kind in ("string", "null", "negative", "huge", "wrong_type", "remove_key"):
        out, where = fz.mutate_json(json.dumps(doc).encode(), kind, np.random.default_rng(3))
        assert out != json.dumps(doc).encode() and where


def test_exercise_reads_data_of_a_clean_store() -> None:
    """The reads of a case return the store's data (the baseline every mutation departs from)."""
    path = data_root() / "v09" / "points.zarrvectors"
    facts = fz.store_facts(path)
    counts = fz.exercise(path, facts)
    expected = json.loads((data_root() / "v09" / "expected" / "points.json").read_text())
    assert counts["objects"] > 0 and counts["groups"] == len(expected["input"]["groups"])
    assert 0 < counts["box_vertices"] < counts["vertices"]
    assert 0 < counts["id_box_vertices"] <= counts["id_vertices"]


def test_exercise_reads_the_pieces_of_path_stores() -> None:
    """The viewer's first look (Store.read_pieces) is part of every path store's case."""
    path = data_root() / "v09" / "polylines.zarrvectors"
    counts = fz.exercise(path, fz.store_facts(path))
    assert 0 < counts["piece_vertices"] < counts["vertices"]
