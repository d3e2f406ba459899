"""The S3 client lever: put/get throughput of the candidate clients on the same S3 endpoint.

    .venv/bin/python bench/s3_clients.py                        # 8 × 16 MiB objects, 1 and 4 threads
    .venv/bin/python bench/s3_clients.py --objects 16 --object-mib 64 --threads 1,8 --repeat 3

Clients (each writes and reads the same objects, one bucket per client, deleted afterwards):

- ``boto3 signed``: boto3 as the product uses it over plain HTTP (botocore SHA-256-hashes every payload for SigV4);
- ``boto3 unsigned``: boto3 with ``s3={"payload_signing_enabled": False}`` (``UNSIGNED-PAYLOAD``; the endpoint must
  accept it, a failure is reported as such);
- ``botocore CRT``: s3transfer's CRT transfer manager (``awscrt``, what boto3 uses with
  ``preferred_transfer_client="crt"``): native multipart, parallel parts;
- ``obstore``: obstore's ``S3Store`` (Rust object_store; releases the GIL).

Single objects are put/got whole (one request each: how the product writes its parts and reads its objects);
``--threads`` runs several at once. Results go to stdout and, with ``--json``, to a file. Nothing is asserted.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import sys
import time
import uuid
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from common import MiB, Services, create_bucket, remove_bucket, s3_settings

Put = Callable[[str, bytes], None]
Get = Callable[[str], int]


def boto3_client(services: Services, signed: bool, threads: int):
    import boto3
    from botocore.config import Config

    return boto3.client(
        "s3",
        endpoint_url=services.s3_endpoint,
        aws_access_key_id=services.access_key,
        aws_secret_access_key=services.secret_key,
        region_name=services.region,
        config=Config(
            max_pool_connections=max(10, threads * 2),
            s3={"payload_signing_enabled": signed, "addressing_style": "path"},
            retries={"max_attempts": 1},
        ),
    )


def boto3_ops(services: Services, bucket: str, threads: int, signed: bool) -> tuple[Put, Get]:
    client = boto3_client(services, signed, threads)

    def put(key: str, data: bytes) -> None:
        client.put_object(Bucket=bucket, Key=key, Body=data)

    def get(key: str) -> int:
        return len(client.get_object(Bucket=bucket, Key=key)["Body"].read())

    return put, get


def crt_ops(services: Services, bucket: str, threads: int) -> tuple[Put, Get]:
    """s3transfer's CRT transfer manager built by hand: boto3's own (``preferred_transfer_client="crt"``) always
    sends to AWS (it builds its request serializer with ``endpoint_url=None``), so it cannot reach another S3."""
    import botocore.session
    from awscrt.auth import AwsCredentialsProvider
    from botocore.config import Config
    from s3transfer.crt import BotocoreCRTRequestSerializer, CRTTransferManager, create_s3_crt_client

    endpoint = services.s3_endpoint or ""
    crt_client = create_s3_crt_client(
        services.region,
        crt_credentials_provider=AwsCredentialsProvider.new_static(services.access_key, services.secret_key),
        num_threads=threads,
        use_ssl=endpoint.startswith("https"),
    )
    serializer = BotocoreCRTRequestSerializer(
        botocore.session.Session(),
        {
            "region_name": services.region,
            "endpoint_url": services.s3_endpoint,
            "config": Config(s3={"addressing_style": "path"}),
        },
    )
    manager = CRTTransferManager(crt_client, serializer)

    def put(key: str, data: bytes) -> None:
        manager.upload(io.BytesIO(data), bucket, key).result()

    def get(key: str) -> int:
        out = io.BytesIO()
        manager.download(bucket, key, out).result()
        return out.tell()

    return put, get


def obstore_ops(services: Services, bucket: str, threads: int) -> tuple[Put, Get]:
    import obstore
    from obstore.store import S3Store

    store = S3Store(
        bucket,
        endpoint=services.s3_endpoint,
        access_key_id=services.access_key,
        secret_access_key=services.secret_key,
        region=services.region,
        virtual_hosted_style_request=False,
        client_options={"allow_http": True, "pool_max_idle_per_host": str(max(10, threads * 2))},
    )

    def put(key: str, data: bytes) -> None:
        obstore.put(store, key, data)

    def get(key: str) -> int:
        return len(obstore.get(store, key).bytes())

    return put, get


CLIENTS: dict[str, Callable[[Services, str, int], tuple[Put, Get]]] = {
    "boto3 signed": lambda s, b, t: boto3_ops(s, b, t, signed=True),
    "boto3 unsigned": lambda s, b, t: boto3_ops(s, b, t, signed=False),
    "botocore CRT": crt_ops,
    "obstore": obstore_ops,
}


def measure(ops: tuple[Put, Get], objects: int, size: int, threads: int) -> dict:
    """Throughput (MB/s of wall) and the client's CPU (CPU seconds of this process per GB moved, every thread,
    native ones included): on a shared machine the server often bounds the first, the second is the client's own."""
    put, get = ops
    data = os.urandom(size)
    keys = [f"bench/{uuid.uuid4().hex}" for _ in range(objects)]
    gigabytes = objects * size / 1e9
    with ThreadPoolExecutor(threads) as pool:
        started, cpu = time.monotonic(), time.process_time()
        list(pool.map(lambda k: put(k, data), keys))
        put_s, put_cpu = time.monotonic() - started, time.process_time() - cpu
        started, cpu = time.monotonic(), time.process_time()
        sizes = list(pool.map(get, keys))
        get_s, get_cpu = time.monotonic() - started, time.process_time() - cpu
    if any(n != size for n in sizes):
        raise RuntimeError(f"read {sizes} bytes, wrote {size} per object")
    return {
        "put_mb_per_s": gigabytes * 1e3 / put_s,
        "get_mb_per_s": gigabytes * 1e3 / get_s,
        "put_cpu_s_per_gb": put_cpu / gigabytes,
        "get_cpu_s_per_gb": get_cpu / gigabytes,
    }


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="bench/s3_clients.py", description=__doc__.splitlines()[0])
    p.add_argument("--objects", type=int, default=8)
    p.add_argument("--object-mib", type=int, default=16)
    p.add_argument("--threads", default="1,4", help="thread counts (default 1,4)")
    p.add_argument("--repeat", type=int, default=2, help="samples per cell; the best is kept (default 2)")
    p.add_argument("--clients", default=",".join(CLIENTS), help=f"default all: {','.join(CLIENTS)}")
    p.add_argument("--json", type=Path, help="also write the results here")
    args = p.parse_args(argv)
    services = Services("", *s3_settings(), external_kafka=False, external_s3=False)  # S3 only: Kafka is not used
    size = args.object_mib * MiB
    results: dict = {
        "s3": services.describe()["s3"],
        "objects": args.objects,
        "object_mib": args.object_mib,
        "cpus": os.cpu_count(),
        "load": " ".join(f"{x:.1f}" for x in os.getloadavg()),
        "clients": {},
    }
    print(f"S3 {results['s3']}: {args.objects} × {args.object_mib} MiB per sample, best of {args.repeat}")
    for name in [c.strip() for c in args.clients.split(",") if c.strip()]:
        for threads in [int(t) for t in args.threads.split(",")]:
            bucket = f"kafka-s3-bench-s3-{uuid.uuid4().hex[:8]}"
            create_bucket(services, bucket)
            cell: dict = {}
            try:
                ops = CLIENTS[name](services, bucket, threads)
                samples = [measure(ops, args.objects, size, threads) for _ in range(args.repeat)]
                cell = {k: max(s[k] for s in samples) for k in ("put_mb_per_s", "get_mb_per_s")}
                cell |= {k: min(s[k] for s in samples) for k in ("put_cpu_s_per_gb", "get_cpu_s_per_gb")}
                print(
                    f"  {name:15} {threads} thread(s): put {cell['put_mb_per_s']:6,.0f} MB/s "
                    f"({cell['put_cpu_s_per_gb']:5.1f} CPU s/GB), get {cell['get_mb_per_s']:6,.0f} MB/s "
                    f"({cell['get_cpu_s_per_gb']:5.1f} CPU s/GB)"
                )
            except Exception as exc:  # a client the endpoint refuses is a result too
                cell = {"error": f"{type(exc).__name__}: {str(exc)[:300]}"}
                print(f"  {name:15} {threads} thread(s): {cell['error']}")
            finally:
                remove_bucket(services, bucket)
            results["clients"].setdefault(name, {})[str(threads)] = cell
    if args.json:
        args.json.write_text(json.dumps(results, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
