"""Fixtures shared by several test modules."""

import pytest


@pytest.fixture(scope="module")
def sim():
    """The compiled ns-3 simulation library (olaf.sim.build); skips, saying why, without ns-3."""
    from olaf.sim.build import SimUnavailable, load

    try:
        return load()
    except SimUnavailable as e:
        pytest.skip(str(e))
