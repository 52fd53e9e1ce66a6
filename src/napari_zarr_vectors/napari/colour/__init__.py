"""How layers are coloured: colour specs, builders' default colours, recolouring live layers."""
