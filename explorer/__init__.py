"""explorer: see README.md in this folder."""
