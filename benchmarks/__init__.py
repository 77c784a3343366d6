"""benchmarks: see README.md in this folder."""
