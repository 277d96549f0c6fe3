"""Fixtures for the Ascend C front-end tests."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from leakyops import ascendc as ac

# the test modules import their reference helpers from _ascendc_testutil.py beside this file
sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture
def core():
    """A fresh AI Core (own 192 KiB Unified Buffer, default mask) made current."""
    with ac.AICore() as c:
        yield c
