"""tests: see README.md in this folder."""
