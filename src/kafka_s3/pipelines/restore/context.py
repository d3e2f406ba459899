"""What every part of a restore works with: its configuration and options, the store, the read plugins, the Kafka
clients' settings and admin client, and the names its progress and transactions go by.

One object, shared by the parts (:mod:`.plan`, :mod:`.targets`, :mod:`.fencing`, :mod:`.schemas`, :mod:`.groups`
and the run loop in :mod:`.driver`): the layout detected under the prefix replaces the configuration and the read
plugins once, and every part sees it.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field

from kafka_s3.core.config.model import Config
from kafka_s3.core.layouts.detection import Detection
from kafka_s3.core.store import Store
from kafka_s3.core.transforms import topic_router
from kafka_s3.io.kafka.admin import Admin
from kafka_s3.io.kafka.settings import client_settings
from kafka_s3.io.stores.spec import StoreSpec
from kafka_s3.pipelines.engine import Engine
from kafka_s3.pipelines.read.layouts import detected
from kafka_s3.pipelines.read.options import RestoreOptions
from kafka_s3.pipelines.read.plugins import ReadPlugins
from kafka_s3.pipelines.task_settings import TaskSettings


@dataclass
class RestoreContext:
    config: Config
    options: RestoreOptions
    engine: Engine
    store_spec: StoreSpec
    store: Store
    plugins: ReadPlugins
    route: Callable[[str], str]  # source topic -> target topic
    admin: Admin
    producer_settings: dict[str, str]
    consumer_settings: dict[str, str]
    progress_base: str  # every group and transactional id of the restore starts with it
    run_id: str = field(default_factory=lambda: uuid.uuid4().hex)  # stamped in its progress (--restart resumes it)
    detection: Detection | None = None  # the layout under topics.dir, found by the first plan
    following: bool = False  # follow(): topics without objects yet are waited for, not an error

    @classmethod
    def open(cls, config: Config, engine: Engine, options: RestoreOptions | None = None) -> RestoreContext:
        """Clients and plugins of ``config`` (nothing is contacted yet, unless ``format.class`` is not set: then the
        bucket is listed to find it, as the first plan would)."""
        spec = StoreSpec.from_config(config)
        store = spec.open()
        detection = None
        if not config["format.class"]:
            config, detection = detected(config, store)
        return cls(
            config=config,
            options=options or RestoreOptions(),
            engine=engine,
            store_spec=spec,
            store=store,
            plugins=ReadPlugins.from_config(config),
            detection=detection,
            route=topic_router(config),
            admin=Admin.for_config(config),
            producer_settings=client_settings(config, "producer"),
            consumer_settings=client_settings(config, "consumer", warn=False),
            progress_base=f"kafka-s3-restore-{config['name']}",
        )

    def task_settings(self) -> TaskSettings:
        """The configuration as tasks receive it (the detected layout included)."""
        return TaskSettings(self.config, self.store_spec, self.producer_settings, self.consumer_settings)

    def detect(self) -> Detection:
        """The layout under the prefix, detected once; the configuration and the read plugins then read with it."""
        if self.detection is None:
            self.config, self.detection = detected(self.config, self.store)
            self.plugins = ReadPlugins.from_config(self.config)
        return self.detection
