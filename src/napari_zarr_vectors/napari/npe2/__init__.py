"""The npe2 entry points (reader, writer, sample data) and what opening a store does to a viewer."""
