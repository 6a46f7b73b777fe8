"""The real model-server tier (a package, so its conftest never shadows tests/conftest.py)."""
