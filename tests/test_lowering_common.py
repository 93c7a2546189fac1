"""lowering/common.py's helpers that compute constants for the kernels."""

from __future__ import annotations

import numpy as np
import pytest

from mcu_planner.graph import Tensor
from mcu_planner.lowering import NotLowerable
from mcu_planner.lowering.common import zero_point_row_sums

ROWS = [[1, 2, 3], [-4, 5, -6]]  # row sums 6 and -5


def _weights() -> Tensor:
    data = np.array(ROWS, dtype=np.int8).tobytes()
    return Tensor(index=0, name="weights", shape=(2, 3), dtype="int8", data=data)


def test_row_sums_add_zero_point_times_each_row_to_the_bias():
    # bias + zp * sum(row), wrapping at int32 as TFLite's int32 arithmetic does.
    assert zero_point_row_sums(_weights(), 7, [10, 20]) == [10 + 7 * 6, 20 - 7 * 5]
    assert zero_point_row_sums(_weights(), 1, [2**31 - 1, 0]) == [-(2**31) + 5, -5]
    assert zero_point_row_sums(_weights(), -3, None) == [-18, 15]
    assert zero_point_row_sums(_weights(), 0, [4, 5]) == [4, 5]


@pytest.mark.parametrize("zero_point", [0, 7])
@pytest.mark.parametrize("bias", [[1], [1, 2, 3]])
def test_a_bias_not_one_value_per_row_is_refused(zero_point, bias):
    # A short array here would leave the kernel reading past it.
    with pytest.raises(NotLowerable, match=f"bias of {len(bias)} values for the 2 rows of 'weights'"):
        zero_point_row_sums(_weights(), zero_point, bias)
