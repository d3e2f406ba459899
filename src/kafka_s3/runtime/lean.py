"""Keep pandas out of the Spark Python workers that run kafka-s3's tasks.

pyarrow imports pandas the first time ``pa.array``, ``pa.scalar``, ``RecordBatch.from_pydict`` or ``pa.table`` meets
a value that is not Arrow data (a Python list, a NumPy array), only to ask whether the value is a pandas object (and
its C++ converter, to learn pandas' null values); it then remembers the answer for the life of the process. In a
worker that import costs ~40 MiB resident (pandas and the ``pyarrow.compute`` it pulls in) and 0.2-0.5 s of CPU
(bench/README.md, "Memory" and "Small runs"), and no kafka-s3 task hands pyarrow a pandas object.

:func:`keep_pandas_unloaded` lets pyarrow ask that question once while ``import pandas`` fails, so its answer is
"no pandas". pyarrow still imports pandas itself whenever an API that needs it is called (``to_pandas``,
``Table.from_pandas``...), and from then on treats pandas objects as such again; until then, a pandas object handed
to ``pa.array`` would be converted as a plain sequence. That is why only the engine's task function calls it (in the
workers of the sessions kafka-s3's commands run their jobs on); the DataFrame reader, which runs in users' sessions
beside their pandas code, does not. A command's own process is left alone: pyspark imports pandas there itself (the
Connect client requires it; a classic session's py4j argument converter imports ``pyspark.testing.utils``, which
imports it).
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from types import ModuleType

_settled = False


class _RefusePandas(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname == "pandas" or fullname.startswith("pandas."):
            raise ModuleNotFoundError(f"pandas is kept out of this process (kafka_s3.runtime.lean): {fullname}")
        return None


@contextmanager
def refusing_pandas() -> Iterator[None]:
    """``import pandas`` fails inside the block (as if pandas were not installed), and works again after it."""
    refuse = _RefusePandas()
    sys.meta_path.insert(0, refuse)
    try:
        yield
    finally:
        sys.meta_path.remove(refuse)


def keep_pandas_unloaded() -> None:
    """Have pyarrow settle, without importing pandas, that this process has no pandas objects (see the module's
    documentation). A no-op when pandas is already imported or this process already settled it (every task of a
    reused worker calls it)."""
    global _settled
    if _settled or "pandas" in sys.modules:
        return
    import pyarrow as pa

    with refusing_pandas():
        # Both of pyarrow's lookups: the Python side's "is this a pandas object?" and its C++ converter's "what are
        # pandas' null values?" (type inference of a Python sequence). Each is made once per process.
        pa.array([0])
    _settled = True
