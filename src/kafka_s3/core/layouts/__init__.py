"""Bucket layouts as a whole: which one a prefix holds (``detection``: kafka-s3's own and each peer's, from
``kafka_s3.core.peers``) and where the standard layout's tombstones go back (``tombstones``). The standard layout is
``kafka_s3.core.layout``; a peer's own is in its package (``core/peers/<peer>/layout.py``)."""
