"""SEER's version string, in a module of its own so that any module can read it
without importing the package façade (``seer/__init__.py``)."""

__version__ = "0.1.0"
