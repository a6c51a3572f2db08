"""Hypothesis profiles for the property tests.

``ci`` (the default) runs a small, derandomized number of examples so the suite stays fast and
reproducible; ``nightly`` runs many more random examples. Select with
``ENVRE_HYPOTHESIS_PROFILE=nightly python3 -m pytest tests/properties``; ``benchmarks/mutation.py``
selects ``mutation`` (10 derandomized examples, no shrinking).
"""

from __future__ import annotations

import os

from hypothesis import HealthCheck, Phase, settings

_SLOW_OK = [HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much]

settings.register_profile("ci", max_examples=40, deadline=None, derandomize=True, database=None, suppress_health_check=_SLOW_OK)
# mutation testing: a quarter of the CI examples, no shrinking (a failure is all a mutation run needs to know)
settings.register_profile("mutation", settings.get_profile("ci"), max_examples=10, phases=[Phase.explicit, Phase.reuse, Phase.generate])
settings.register_profile("nightly", max_examples=1000, deadline=None, suppress_health_check=_SLOW_OK)
settings.load_profile(os.environ.get("ENVRE_HYPOTHESIS_PROFILE", "ci"))
