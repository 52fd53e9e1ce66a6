"""Level of detail: what to load for a view (plan), loading it off the UI thread, and swapping it into layers."""
