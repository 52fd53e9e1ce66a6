"""Whole-store jobs (napari-free): computations over every chunk of a level as dask tasks.

* :func:`qa_report` -- the whole-store Pyramid QA report (:mod:`.qa`, HTML in :mod:`.report`);
* :func:`density_map` -- a track or point density image in the store's world placement
  (:mod:`.density`).

Tasks run on dask's threaded scheduler by default, or on a ``dask.distributed`` cluster
(:mod:`.runner`); dask is the optional ``jobs`` extra.
"""

from .density import DensityMap, density_map
from .qa import QAResult, qa_report
from .runner import ChunkFailure

__all__ = ["ChunkFailure", "DensityMap", "QAResult", "density_map", "qa_report"]
