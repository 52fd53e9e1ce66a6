"""The sections of the Pyramid QA model (:class:`..model.PyramidQA`): one module per section
of the *Pyramid QA* dock widget (:mod:`...widgets.pyramid`)."""
