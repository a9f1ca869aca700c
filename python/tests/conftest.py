"""Shared fixtures of the tensorgraph tests (run by ctest as Python.pytest; see python/CMakeLists.txt)."""
import pathlib

import numpy as np
import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]


@pytest.fixture
def rng():
    return np.random.default_rng(0)


@pytest.fixture
def root():
    return ROOT
