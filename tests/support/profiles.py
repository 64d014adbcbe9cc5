"""Hypothesis profiles shared by the property tests (fuzzing and the markdown oracle).

``ci`` (200 examples per property) by default; ``bench`` when ``TRIAGE_FUZZ_EXAMPLES`` is set
(its value is ``max_examples``; ``benchmarks/fuzz.py`` and ``benchmarks/reliability.py`` use
10,000). Decorate a property with :data:`FUZZ`.
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

__all__ = ["FUZZ", "HTTP_FUZZ", "PROFILE"]

_SUPPRESS = [HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large]
settings.register_profile(
    "ci", max_examples=200, deadline=None, suppress_health_check=_SUPPRESS
)  # fmt: skip
settings.register_profile(
    "bench", max_examples=int(os.environ.get("TRIAGE_FUZZ_EXAMPLES") or 10_000), deadline=None,
    suppress_health_check=_SUPPRESS, database=None,
)  # fmt: skip
PROFILE = "bench" if os.environ.get("TRIAGE_FUZZ_EXAMPLES") else "ci"
FUZZ = settings(settings.get_profile(PROFILE))
HTTP_FUZZ = settings(FUZZ, max_examples=max(100, (FUZZ.max_examples or 0) // 2))
"""Half the examples of :data:`FUZZ`, 100 at least: for properties whose every example is an
HTTP round trip to a loopback server."""
