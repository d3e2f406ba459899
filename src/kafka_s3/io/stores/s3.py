"""The S3 store (boto3): streaming multipart uploads with conditional create, seekable ranged reads, our retries.

Conditional create is ``If-None-Match: *`` on PutObject (objects up to one part) and on CompleteMultipartUpload
(larger ones), so a key is written at most once even when tasks race. Every request goes through one
:class:`~kafka_s3.io.stores.retry.RetryPolicy` (botocore's own retries are off) and every failure is mapped to the
project's errors the same way, whatever the operation.

Over 450 lines: the upload and the reader drive the store's request methods (and its part pool and memory budget)
directly; apart, they would need those internals as a public interface of their own. What a failure means is
:mod:`.s3_errors`.
"""

from __future__ import annotations

import base64
import builtins
import io
import logging
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from functools import partial
from itertools import islice
from typing import Any, BinaryIO, TypeVar, cast
from urllib.parse import urlencode

from botocore.config import Config as BotoConfig
from botocore.exceptions import (
    BotoCoreError,
    ClientError,
)

from kafka_s3.core.errors import StoreError
from kafka_s3.core.store import ObjectInfo, Store, Upload
from kafka_s3.io.stores.retry import (
    RetryPolicy,
    describe,
    error_code,
    http_status,
    is_transient,
)
from kafka_s3.io.stores.s3_client import boto3_session, client_config
from kafka_s3.io.stores.s3_errors import S3Errors
from kafka_s3.io.stores.spec import StoreSpec
from kafka_s3.io.stores.spill import MemoryBudget, SpillBuffer

log = logging.getLogger(__name__)

T = TypeVar("T")

MiB = 1024 * 1024
DELETE_BATCH = 1000  # the DeleteObjects maximum
STALL_BUDGET_S = 60.0
"""An operation whose attempts time out (or cannot connect) starts no retry after this many seconds: with the read
timeout, a store that stopped answering fails an operation after two attempts, about a minute, not
``s3.part.retries`` read timeouts."""


# --------------------------------------------------------------------------------------------------------- store
class S3Store(Store):
    """One bucket of an S3-compatible store."""

    def __init__(self, spec: StoreSpec):
        self.spec = spec
        self.url = f"s3://{spec.bucket}"
        self.endpoint = spec.endpoint_url or f"AWS S3 ({spec.region})"
        self._session = boto3_session(spec)
        self._client = self._session.client(
            "s3", endpoint_url=spec.endpoint_url, config=client_config(spec), verify=spec.ca_bundle
        )
        self._retry = RetryPolicy(spec.part_retries, spec.retry_backoff_ms, stall_budget_s=STALL_BUDGET_S)
        self._write_args, self._sse_c = _encryption_args(spec)
        if spec.acl:
            self._write_args["ACL"] = spec.acl
        self._pool: ThreadPoolExecutor | None = None
        self._pool_lock = threading.Lock()
        self.memory_budget = MemoryBudget(spec.memory_budget_bytes)
        self._errors = S3Errors(spec, self.url, self.endpoint, self._session)

    # ---------------------------------------------------------------------------------------------- contract
    def check(self) -> None:
        """The bucket exists and answers, within ``service.timeout.ms``: each attempt may take half of it, and no
        retry starts that could not end before it (an endpoint that accepts connections but never answers would
        otherwise hold a command for minutes of read timeouts)."""
        budget = self.spec.service_timeout_ms / 1000
        per_attempt = budget / 2
        client = self._session.client(
            "s3",
            endpoint_url=self.spec.endpoint_url,
            config=client_config(self.spec).merge(BotoConfig(connect_timeout=per_attempt, read_timeout=per_attempt)),
            verify=self.spec.ca_bundle,
        )
        deadline = time.monotonic() + budget
        attempts = 0
        while True:
            attempts += 1
            try:
                client.head_bucket(Bucket=self.spec.bucket)
                return
            except (ClientError, BotoCoreError, OSError) as exc:
                delay = self._retry.backoff_seconds(attempts)
                last = attempts > self.spec.part_retries or time.monotonic() + delay + per_attempt > deadline
                if not is_transient(exc):
                    raise self._errors.translate("head_bucket", "", exc) from exc
                if last:
                    raise StoreError(
                        f"head_bucket {self.url}: cannot reach the object store at {self.endpoint}: {describe(exc)} "
                        f"(gave up after {attempts} attempt{'s' if attempts > 1 else ''}) "
                        f"within service.timeout.ms={self.spec.service_timeout_ms}"
                    ) from exc
                log.warning("head_bucket %s failed (%s); retry %d in %.3f s", self.url, describe(exc), attempts, delay)
                time.sleep(delay)

    def create(
        self,
        key: str,
        metadata: Mapping[str, str] | None = None,
        tags: Mapping[str, str] | None = None,
    ) -> S3Upload:
        args = dict(self._write_args)
        if metadata:
            args["Metadata"] = dict(metadata)
        if tags:
            args["Tagging"] = urlencode(dict(tags))
        return S3Upload(self, key, args)

    def put_tags(self, key: str, tags: Mapping[str, str]) -> None:
        tag_set = [{"Key": name, "Value": value} for name, value in tags.items()]
        self._call(
            "put_object_tagging",
            key,
            partial(self._client.put_object_tagging, Bucket=self.spec.bucket, Key=key, Tagging={"TagSet": tag_set}),
        )

    def head(self, key: str) -> ObjectInfo | None:
        def attempt() -> dict[str, Any] | None:
            try:
                response: dict[str, Any] = self._client.head_object(Bucket=self.spec.bucket, Key=key, **self._sse_c)
                return response
            except ClientError as exc:
                if http_status(exc) == 404:
                    return None
                raise

        response = self._call("head_object", key, attempt)
        if response is None:
            return None
        return ObjectInfo(
            key=key,
            size=response["ContentLength"],
            etag=response.get("ETag", "").strip('"'),
            last_modified=response["LastModified"].timestamp(),
            metadata=response.get("Metadata", {}),
        )

    def get(self, key: str, start: int | None = None, end: int | None = None) -> bytes:
        args: dict[str, Any] = {"Bucket": self.spec.bucket, "Key": key, **self._sse_c}
        if start is not None or end is not None:
            args["Range"] = f"bytes={start or 0}-{'' if end is None else end}"
        # the body is read inside the attempt, so a connection reset half-way through the bytes is retried too
        data: bytes = self._call("get_object", key, lambda: self._client.get_object(**args)["Body"].read())
        return data

    def open(self, key: str) -> BinaryIO:
        info = self.head(key)
        if info is None:
            raise StoreError(f"open {self.url}/{key}: no such object")
        return cast(BinaryIO, S3ObjectReader(self, key, info.size))  # a binary file, though not a typing.BinaryIO

    def list(self, prefix: str) -> Iterator[ObjectInfo]:
        # Continuation tokens only: some stores (SeaweedFS) do not list in strict byte order, so resuming after the
        # last key seen (StartAfter) can skip keys.
        args: dict[str, Any] = {"Bucket": self.spec.bucket, "Prefix": prefix}
        while True:
            page = self._call("list_objects_v2", prefix, partial(self._client.list_objects_v2, **args))
            for item in page.get("Contents", ()):
                yield ObjectInfo(
                    key=item["Key"],
                    size=item["Size"],
                    etag=item.get("ETag", "").strip('"'),
                    last_modified=item["LastModified"].timestamp(),
                )
            if not page.get("IsTruncated"):
                return
            if not page.get("NextContinuationToken"):
                raise StoreError(f"list {self.url}/{prefix}: truncated listing without a continuation token")
            args["ContinuationToken"] = page["NextContinuationToken"]

    def children(self, prefix: str, delimiter: str = "/") -> builtins.list[str]:  # ``list`` is the method here
        args: dict[str, Any] = {"Bucket": self.spec.bucket, "Prefix": prefix, "Delimiter": delimiter}
        names: set[str] = set()
        while True:
            page = self._call("list_objects_v2", prefix, partial(self._client.list_objects_v2, **args))
            names.update(p["Prefix"][len(prefix) :].removesuffix(delimiter) for p in page.get("CommonPrefixes", ()))
            if not page.get("IsTruncated"):
                return sorted(names)
            if not page.get("NextContinuationToken"):
                raise StoreError(f"list {self.url}/{prefix}: truncated listing without a continuation token")
            args["ContinuationToken"] = page["NextContinuationToken"]

    def delete(self, keys: Iterable[str]) -> None:
        remaining = iter(keys)
        while batch := list(islice(remaining, DELETE_BATCH)):
            request = {"Objects": [{"Key": k} for k in batch], "Quiet": True}
            response = self._call(
                "delete_objects",
                batch[0] if len(batch) == 1 else f"{batch[0]} (and {len(batch) - 1} more)",
                partial(self._client.delete_objects, Bucket=self.spec.bucket, Delete=request),
            )
            errors = response.get("Errors") or []
            if errors:
                raise self._errors.delete_refused(errors, batch)

    def create_bucket(self) -> None:
        args: dict[str, Any] = {"Bucket": self.spec.bucket}
        if self.spec.region != "us-east-1":  # us-east-1 is the one region S3 refuses as a location constraint
            args["CreateBucketConfiguration"] = {"LocationConstraint": self.spec.region}

        def attempt() -> None:
            try:
                self._client.create_bucket(**args)
            except ClientError as exc:
                if error_code(exc) != "BucketAlreadyOwnedByYou":  # creating our own bucket again is a success
                    raise

        self._call("create_bucket", "", attempt)

    def close(self) -> None:
        with self._pool_lock:
            pool, self._pool = self._pool, None
        if pool is not None:
            pool.shutdown(wait=True)
        self._client.close()

    # ------------------------------------------------------------------------------------ used by S3Upload
    def _put_object(self, key: str, body: SpillBuffer, args: Mapping[str, Any]) -> dict[str, Any]:
        return self._call(
            "put_object",
            key,
            lambda: self._client.put_object(
                Bucket=self.spec.bucket, Key=key, Body=body.body(), IfNoneMatch="*", **args
            ),
        )

    def _create_multipart_upload(self, key: str, args: Mapping[str, Any]) -> str:
        response = self._call(
            "create_multipart_upload",
            key,
            partial(self._client.create_multipart_upload, Bucket=self.spec.bucket, Key=key, **args),
        )
        upload_id: str = response["UploadId"]
        return upload_id

    def _upload_part(self, key: str, upload_id: str, number: int, body: SpillBuffer) -> dict[str, Any]:
        response = self._call(
            f"upload_part #{number}",
            key,
            lambda: self._client.upload_part(
                Bucket=self.spec.bucket,
                Key=key,
                UploadId=upload_id,
                PartNumber=number,
                Body=body.body(),
                **self._sse_c,
            ),
        )
        return {"PartNumber": number, "ETag": response["ETag"]}

    def _complete_multipart_upload(
        self, key: str, upload_id: str, parts: builtins.list[dict[str, Any]]
    ) -> dict[str, Any]:
        return self._call(
            "complete_multipart_upload",
            key,
            partial(
                self._client.complete_multipart_upload,
                Bucket=self.spec.bucket,
                Key=key,
                UploadId=upload_id,
                MultipartUpload={"Parts": parts},
                IfNoneMatch="*",
                **self._sse_c,
            ),
        )

    def _abort_multipart_upload(self, key: str, upload_id: str) -> None:
        self._call(
            "abort_multipart_upload",
            key,
            partial(self._client.abort_multipart_upload, Bucket=self.spec.bucket, Key=key, UploadId=upload_id),
        )

    def _part_pool(self) -> ThreadPoolExecutor:
        with self._pool_lock:
            if self._pool is None:
                self._pool = ThreadPoolExecutor(PART_UPLOAD_THREADS, thread_name_prefix="kafka-s3-part")
            return self._pool

    # ------------------------------------------------------------------------------------ errors and retries
    def _call(self, operation: str, key: str, attempt: Callable[[], T]) -> T:
        try:
            return self._retry.run(operation, f"{self.url}/{key}" if key else self.url, attempt)
        except (ClientError, BotoCoreError, OSError) as exc:
            raise self._errors.translate(operation, key, exc) from exc


def _encryption_args(spec: StoreSpec) -> tuple[dict[str, Any], dict[str, Any]]:
    """(arguments of object-creating requests, SSE-C arguments that every request on an object must repeat)."""
    if spec.sse_customer_key:
        # botocore base64-encodes the raw key and adds its MD5 header itself
        sse_c = {"SSECustomerAlgorithm": "AES256", "SSECustomerKey": base64.b64decode(spec.sse_customer_key)}
        return dict(sse_c), sse_c
    write_args: dict[str, Any] = {}
    if spec.sse_algorithm:
        write_args["ServerSideEncryption"] = spec.sse_algorithm
        if spec.sse_kms_key_id:
            write_args["SSEKMSKeyId"] = spec.sse_kms_key_id
    return write_args, {}


READ_AHEAD_BYTES = 8 * MiB


PART_UPLOAD_THREADS = 4


# -------------------------------------------------------------------------------------------------------- upload
class S3Upload(Upload):
    """Bytes go to a spill buffer; each full part is uploaded in the background while the next one fills.

    The multipart upload is only created when a first part is full, so objects up to ``s3.part.size`` take a single
    conditional PutObject. At most one part is in flight per upload, so memory stays within the in-memory threshold
    of the part being filled plus the part being sent.
    """

    def __init__(self, store: S3Store, key: str, args: Mapping[str, Any]):
        self.key = key
        self._store = store
        self._args = args
        self._part_size = store.spec.part_size
        self._buffer = self._new_buffer()
        self._upload_id: str | None = None
        self._parts: list[dict[str, Any]] = []
        self._in_flight: tuple[Future[dict[str, Any]], SpillBuffer] | None = None
        self._bytes_written = 0
        self._closed = False

    def _new_buffer(self) -> SpillBuffer:
        return SpillBuffer(self._store.spec.memory_buffer_bytes, self._store.memory_budget)

    @property
    def bytes_written(self) -> int:
        return self._bytes_written

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def memory_bytes(self) -> int:
        """Bytes this upload holds in memory: the part being filled plus, unless spilled, the part in flight."""
        in_flight = self._in_flight[1].memory_bytes if self._in_flight else 0
        return self._buffer.memory_bytes + in_flight

    @property
    def parts_started(self) -> int:
        return len(self._parts) + (1 if self._in_flight else 0)

    def write(self, data: bytes | bytearray | memoryview) -> int:
        self._check_open()
        view = memoryview(data).cast("B")
        size = view.nbytes
        try:
            while view.nbytes:
                if self._buffer.size == self._part_size:  # full, and more bytes follow: it is not the last part
                    self._send_full_part()
                room = self._part_size - self._buffer.size
                self._buffer.write(view[:room])
                view = view[room:]
        except BaseException:
            self.abort()
            raise
        self._bytes_written += size
        return size

    def commit(self) -> ObjectInfo:
        self._check_open()
        try:
            if self._upload_id is None:
                response = self._store._put_object(self.key, self._buffer, self._args)
            else:
                self._collect_in_flight()
                self._parts.append(self._send_part(len(self._parts) + 1, self._buffer))
                response = self._store._complete_multipart_upload(self.key, self._upload_id, self._parts)
        except BaseException:
            self.abort()
            raise
        self._closed = True
        self._buffer.close()
        return ObjectInfo(key=self.key, size=self._bytes_written, etag=response.get("ETag", "").strip('"'))

    def abort(self) -> None:
        if self._closed:
            return
        self._closed = True
        if self._in_flight is not None:
            future, _ = self._in_flight
            self._in_flight = None
            future.exception()  # wait: a part landing after the abort would outlive it; its error no longer matters
        self._buffer.close()
        if self._upload_id is not None:
            try:
                self._store._abort_multipart_upload(self.key, self._upload_id)
            except StoreError as exc:
                log.warning(
                    "could not abort multipart upload %s of %s (a bucket lifecycle rule can remove it): %s",
                    self._upload_id,
                    self.key,
                    exc,
                )

    def _check_open(self) -> None:
        if self._closed:
            raise ValueError(f"upload of {self.key} is already committed or aborted")

    def _send_full_part(self) -> None:
        if self._upload_id is None:
            self._upload_id = self._store._create_multipart_upload(self.key, self._args)
        self._collect_in_flight()
        buffer, self._buffer = self._buffer, self._new_buffer()
        future = self._store._part_pool().submit(self._send_part, len(self._parts) + 1, buffer)
        self._in_flight = (future, buffer)

    def _collect_in_flight(self) -> None:
        if self._in_flight is not None:
            future, _ = self._in_flight
            self._in_flight = None
            self._parts.append(future.result())

    def _send_part(self, number: int, buffer: SpillBuffer) -> dict[str, Any]:
        assert self._upload_id is not None
        try:
            return self._store._upload_part(self.key, self._upload_id, number, buffer)
        finally:
            buffer.close()


# -------------------------------------------------------------------------------------------------------- reader
class S3ObjectReader(io.RawIOBase):
    """A seekable, read-only file over ranged GETs with a read-ahead window.

    Sequential reads stream the object window by window (never whole); seeks are free, so Parquet readers can jump
    to the footer and back.
    """

    def __init__(self, store: S3Store, key: str, size: int, read_ahead: int = READ_AHEAD_BYTES):
        super().__init__()
        self.key = key
        self.size = size
        self._store = store
        self._read_ahead = read_ahead
        self._position = 0
        self._window = memoryview(b"")
        self._window_start = 0

    def readable(self) -> bool:
        return True

    def seekable(self) -> bool:
        return True

    def tell(self) -> int:
        self._checkClosed()
        return self._position

    def seek(self, offset: int, whence: int = io.SEEK_SET) -> int:
        self._checkClosed()
        base = {io.SEEK_SET: 0, io.SEEK_CUR: self._position, io.SEEK_END: self.size}[whence]
        if base + offset < 0:
            raise ValueError(f"negative seek position {base + offset} in {self.key}")
        self._position = base + offset
        return self._position

    def read(self, size: int | None = -1) -> bytes:
        self._checkClosed()
        remaining = self.size - self._position
        wanted = remaining if size is None or size < 0 else min(size, remaining)
        pieces = []
        while wanted > 0:
            offset = self._position - self._window_start
            if not 0 <= offset < len(self._window):
                self._fill(wanted)
                offset = 0
            piece = self._window[offset : offset + wanted]
            pieces.append(piece)
            self._position += len(piece)
            wanted -= len(piece)
        return b"".join(pieces)

    def readinto(self, buffer: Any) -> int:
        view = memoryview(buffer).cast("B")
        data = self.read(len(view))
        view[: len(data)] = data
        return len(data)

    def _fill(self, wanted: int) -> None:
        start = self._position
        end = min(start + max(wanted, self._read_ahead), self.size) - 1
        data = self._store.get(self.key, start, end)
        if len(data) != end - start + 1:
            raise StoreError(
                f"get {self._store.url}/{self.key}: asked for bytes {start}-{end}, got {len(data)} bytes "
                "(the object changed while being read?)"
            )
        self._window = memoryview(data)
        self._window_start = start

    def close(self) -> None:
        self._window = memoryview(b"")
        super().close()
