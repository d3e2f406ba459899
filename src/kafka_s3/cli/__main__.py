"""``python -m kafka_s3.cli``: the same as the ``kafka-s3`` command."""

import sys

from kafka_s3.cli.main import main

sys.exit(main())
