"""Imports every converter family, filling the table of _registry (one file per op family)."""
from . import _convert_elementwise, _convert_nn, _convert_reduce, _convert_shape, _convert_training  # noqa: F401
