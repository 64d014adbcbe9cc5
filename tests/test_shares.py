"""The Wilson interval of every share, against SciPy's as the oracle."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.stats import binomtest

from bot.shares import Share, wilson


@given(st.integers(1, 5000).flatmap(lambda n: st.tuples(st.integers(0, n), st.just(n))))
def test_the_interval_is_scipys_wilson_interval(kn: tuple[int, int]) -> None:
    k, n = kn
    oracle = binomtest(k, n).proportion_ci(confidence_level=0.95, method="wilson")
    low, high = wilson(k, n)
    assert low == pytest.approx(float(oracle.low), abs=1e-12)
    assert high == pytest.approx(float(oracle.high), abs=1e-12)
    assert 0 <= low <= k / n <= high <= 1


@pytest.mark.parametrize(("k", "n"), [(0, 0), (-1, 5), (6, 5), (1, -1)])
def test_no_share_of_nothing_or_of_more_than_all(k: int, n: int) -> None:
    with pytest.raises(ValueError, match="no share"):
        wilson(k, n)


def test_a_share_reads_with_its_count_and_interval() -> None:
    assert str(Share(34, 61)) == "56% (34 of 61; 95% CI 43–67%)"
    assert str(Share(4, 5)) == "80% (4 of 5; 95% CI 38–96%)"
    assert str(Share(0, 0)) == "– (0 items)"
    assert Share(400, 500).half_width < Share(4, 5).half_width
