"""What an S3 request's failure means, said once for every operation: the project's error naming the request, the
object, the endpoint, the identity and the IAM action it needed (never a secret).
"""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError, HTTPClientError, NoCredentialsError, ReadTimeoutError
from botocore.exceptions import ConnectionError as BotoConnectionError

from kafka_s3.core.errors import BucketNotFoundError, ObjectExistsError, StoreAccessDeniedError, StoreError
from kafka_s3.io.stores import s3_client
from kafka_s3.io.stores.retry import describe, error_code, http_status, is_transient, tls_verification_failure
from kafka_s3.io.stores.spec import StoreSpec

ACCESS_DENIED_CODES = frozenset(
    {"AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "InvalidToken", "ExpiredToken", "AllAccessDisabled"}
)
# The IAM action each request needs (what an access-denied error names).
S3_ACTIONS = {
    "head_bucket": "s3:ListBucket",
    "list_objects_v2": "s3:ListBucket",
    "head_object": "s3:GetObject",
    "get_object": "s3:GetObject",
    "put_object": "s3:PutObject",
    "create_multipart_upload": "s3:PutObject",
    "upload_part": "s3:PutObject",
    "complete_multipart_upload": "s3:PutObject",
    "abort_multipart_upload": "s3:AbortMultipartUpload",
    "put_object_tagging": "s3:PutObjectTagging",
    "delete_objects": "s3:DeleteObject",
    "create_bucket": "s3:CreateBucket",
}
BUCKET_ACTIONS = frozenset({"s3:ListBucket", "s3:CreateBucket"})


def s3_action(operation: str) -> str:
    """``upload_part #3`` → ``s3:PutObject``; an operation not in the table keeps its own name."""
    name = operation.split(" ", 1)[0]
    return S3_ACTIONS.get(name, name)


# 412: the key exists. (409 ConditionalRequestConflict is a race to retry: see retry.TRANSIENT_CODES.)
CONDITION_FAILED_CODES = frozenset({"PreconditionFailed"})


class S3Errors:
    """The errors of one bucket's requests (``session``: boto3's, asked for the access key id it found)."""

    def __init__(self, spec: StoreSpec, url: str, endpoint: str, session: Any):
        self._spec = spec
        self.url = url
        self.endpoint = endpoint
        self._session = session

    def translate(self, operation: str, key: str, exc: Exception) -> StoreError:
        """The project error for a failure, the same for every operation."""
        where = f"{self.url}/{key}" if key else self.url
        tls_reason = tls_verification_failure(exc)
        if tls_reason is not None:
            trusted = f"the CAs in {self._spec.ca_bundle}" if self._spec.ca_bundle else "the system's CAs"
            problem = (
                "its certificate does not name this host"
                if "Hostname mismatch" in tls_reason
                else "its certificate is not signed by a CA this client trusts"
            )
            return StoreError(
                f"{operation} {where}: TLS certificate verification failed for the object store at {self.endpoint}: "
                f"{problem} ({tls_reason}; trusting {trusted}); set s3.ssl.ca.bundle (or AWS_CA_BUNDLE) to the PEM "
                "file of the CA that signed the store's certificate"
            )
        if is_transient(exc):
            attempts = getattr(exc, "retry_attempts", self._spec.part_retries + 1)
            cause = f"{describe(exc)} (gave up after {attempts} attempt{'s' if attempts > 1 else ''})"
        else:
            cause = describe(exc)
        if isinstance(exc, ClientError):
            status, code = http_status(exc), error_code(exc)
            if code == "NoSuchBucket" or (operation == "head_bucket" and status == 404):
                return BucketNotFoundError(
                    f"bucket '{self._spec.bucket}' does not exist at {self.endpoint}; buckets are never created "
                    f"implicitly: run `kafka-s3 bucket create {self._spec.bucket}`"
                )
            if status == 403 or code in ACCESS_DENIED_CODES:
                action = s3_action(operation)
                if code in ("", "403", "AccessDenied"):  # a missing right (a HEAD's 403 carries no code)
                    return StoreAccessDeniedError(
                        f"AccessDenied on {action} for {where}: access denied at {self.endpoint} for "
                        f"{self._identity()} ({cause}); this identity needs {action} on {self._resource(action, key)} "
                        "(docs/security.md lists what each command needs), or check "
                        f"aws.access.key.id / aws.secret.access.key{self._encryption_hint(operation, exc)}"
                    )
                return StoreAccessDeniedError(
                    f"{code} on {action} for {where}: access denied at {self.endpoint} for {self._identity()} "
                    f"({cause}); check aws.access.key.id / aws.secret.access.key (or the AWS credentials chain) and "
                    "the bucket's permissions"
                )
            if status == 412 or code in CONDITION_FAILED_CODES:
                return ObjectExistsError(key)
            if code == "NoSuchKey":
                return StoreError(f"{operation} {where}: no such object")
        if isinstance(exc, NoCredentialsError):
            return StoreAccessDeniedError(
                f"{operation} {where}: no AWS credentials found; set aws.access.key.id and aws.secret.access.key, "
                "or configure the AWS default credentials chain"
            )
        if isinstance(exc, BotoConnectionError) and not isinstance(exc, HTTPClientError):
            return StoreError(f"{operation} {where}: cannot reach the object store at {self.endpoint}: {cause}")
        if isinstance(exc, (ReadTimeoutError, TimeoutError)):
            return StoreError(
                f"{operation} {where}: the object store at {self.endpoint} did not answer within "
                f"{s3_client.READ_TIMEOUT_S} s: {cause}"
            )
        return StoreError(f"{operation} {where} failed: {cause}{self._encryption_hint(operation, exc)}")

    def _encryption_hint(self, operation: str, exc: Exception) -> str:
        """What the encryption settings may have to do with a refused request (never the customer key itself)."""
        if not isinstance(exc, ClientError):
            return ""
        message = str(exc.response.get("Error", {}).get("Message") or "").lower()
        if http_status(exc) == 400 and "customer" in message and not self._spec.sse_customer_key:
            return (
                "; the object is encrypted with a customer-provided key (SSE-C): set s3.sse.customer.key to the key "
                "the backup used"
            )
        if self._spec.sse_algorithm and "kms" in self._spec.sse_algorithm and s3_action(operation) == "s3:PutObject":
            key = f" with s3.sse.kms.key.id={self._spec.sse_kms_key_id}" if self._spec.sse_kms_key_id else ""
            return (
                f"; objects are written with s3.ssea.name={self._spec.sse_algorithm}{key}: does the store support "
                "SSE-KMS, and may this identity use the key (kms:GenerateDataKey)?"
            )
        return ""

    def _resource(self, action: str, key: str) -> str:
        """The IAM resource an action is granted on: the bucket for bucket-level actions, else its objects."""
        bucket = f"arn:aws:s3:::{self._spec.bucket}"
        return bucket if action in BUCKET_ACTIONS else f"{bucket}/{key or '*'}"

    def _identity(self) -> str:
        """Who the store saw, for access errors: the access key id or role, never a secret."""
        if self._spec.role_arn:
            return f"role '{self._spec.role_arn}'"
        if self._spec.access_key_id:
            return f"access key id '{self._spec.access_key_id}'"
        credentials = self._session.get_credentials()
        return f"access key id '{credentials.access_key}'" if credentials else "no credentials"

    def delete_refused(self, errors: list[dict[str, Any]], batch: list[str]) -> StoreError:
        """DeleteObjects answers 200 with per-key errors: the first one, as the error of the whole batch."""
        first = errors[0]
        if first.get("Code") == "AccessDenied":
            action = "s3:DeleteObject"
            return StoreAccessDeniedError(
                f"AccessDenied on {action} for {self.url}/{first.get('Key')}: access denied at {self.endpoint} "
                f"for {self._identity()} ({len(errors)} of {len(batch)} keys not deleted); this identity "
                f"needs {action} on {self._resource(action, str(first.get('Key')))}"
            )
        return StoreError(
            f"delete_objects {self.url}: {len(errors)} of {len(batch)} keys not deleted, e.g. "
            f"{first.get('Key')}: {first.get('Code')} {first.get('Message', '')}".rstrip()
        )
