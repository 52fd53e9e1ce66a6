"""``python -m napari_zarr_vectors``: the command line (:mod:`.cli`)."""

from .cli import main

raise SystemExit(main())
