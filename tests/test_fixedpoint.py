import math

import pytest

from olaf.fixedpoint import (
    INT32_MAX,
    INT32_MIN,
    grads_from_fixed,
    grads_to_fixed,
    reward_from_fixed,
    reward_to_fixed,
    sat_add32,
    sat_add_u16,
    to_fixed,
)


def test_formats():
    assert reward_to_fixed(1.0) == 65536
    assert reward_to_fixed(-0.5) == -32768
    assert grads_to_fixed([1.0, -1.0, 2**-24]) == [1 << 24, -(1 << 24), 1]
    assert reward_from_fixed(98304) == 1.5
    assert grads_from_fixed([1 << 23]) == [0.5]


def test_round_half_even_and_saturation():
    assert to_fixed(0.5 / 65536, 16) == 0
    assert to_fixed(1.5 / 65536, 16) == 2
    assert reward_to_fixed(1e9) == INT32_MAX
    assert reward_to_fixed(-1e9) == INT32_MIN
    assert to_fixed(math.inf, 16) == INT32_MAX
    with pytest.raises(ValueError, match="NaN"):
        to_fixed(math.nan, 16)


def test_saturating_adds():
    assert sat_add32(INT32_MAX, 1) == INT32_MAX
    assert sat_add32(INT32_MIN, -1) == INT32_MIN
    assert sat_add32(5, -7) == -2
    assert sat_add_u16(65535, 3) == 65535
    assert sat_add_u16(1, 2) == 3
