"""``tests.support.integration`` under its old top-level name ``integration_helpers``, for tests/chaos alone (it
imports it by that name, with ``tests/integration`` on ``sys.path``). Remove once tests/chaos imports
``tests.support.integration``."""

from tests.support.integration import *  # noqa: F403
