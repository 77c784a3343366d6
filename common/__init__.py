"""common: see README.md in this folder."""
