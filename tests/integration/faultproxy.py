"""``tests.support.faultproxy`` under its old top-level name ``faultproxy``, for tests/chaos alone (it imports it by
that name, with ``tests/integration`` on ``sys.path``). Remove once tests/chaos imports ``tests.support.faultproxy``."""

from tests.support.faultproxy import *  # noqa: F403
