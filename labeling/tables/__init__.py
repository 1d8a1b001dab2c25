"""Label tables: versions, export and import, diffs between versions and runs."""
