"""training: see README.md in this folder."""
