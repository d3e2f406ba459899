"""The engine of a command on the user's Spark server (:mod:`kafka_s3.spark.server`): a :class:`SparkEngine` that
runs Spark in-process instead when the server stopped answering between the command's choice and its first job."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from kafka_s3.core.errors import ConfigError
from kafka_s3.spark.engine import SparkEngine
from kafka_s3.spark.server import log_tail, read_state

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

log = logging.getLogger("kafka_s3.spark.server")


class ServerEngine(SparkEngine):
    """Jobs on the server at ``remote``; a server that does not answer is said (with its log's tail) and the
    command's session is an in-process one (``local[*]``), as without a server."""

    @property
    def session(self) -> SparkSession:
        if self._session is None and self.remote is not None:
            conf, self.conf = self.conf, {}  # the server was started with them (their own settings: no session's)
            try:
                return super().session
            except ConfigError as exc:
                state = read_state()
                log.warning(
                    "the Spark server %s did not answer (%s): this command runs Spark in-process%s",
                    self.remote,
                    exc,
                    log_tail(state) if state is not None else "",
                )
                self.remote = None
            finally:
                self.conf = conf
        return super().session
