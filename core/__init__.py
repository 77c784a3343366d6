"""core: see README.md in this folder."""
