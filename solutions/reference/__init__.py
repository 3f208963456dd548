"""Reference solutions, generated from source/ (see coursekit.reference)."""
