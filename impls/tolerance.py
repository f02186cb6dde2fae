"""Moved to `linrnn.base.tolerance` (issue 51; docs/architecture.md, "What moved where"): `linrnn.impls.tolerance` still imports,
as the same module, for users' code. Nothing in the package imports this name (tests/test_packaging.py)."""

import sys

from linrnn.base import tolerance

sys.modules[__name__] = tolerance
