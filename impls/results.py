"""Moved to `linrnn.base.results` (issue 51; docs/architecture.md, "What moved where"): `linrnn.impls.results` still imports,
as the same module, for users' code. Nothing in the package imports this name (tests/test_packaging.py)."""

import sys

from linrnn.base import results

sys.modules[__name__] = results
