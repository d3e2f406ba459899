"""Issue 13 item 4: the IAM action an access-denied error names, per store request."""

from __future__ import annotations

import pytest

from kafka_s3.io.stores.s3_errors import s3_action


@pytest.mark.parametrize(
    ("operation", "action"),
    [
        ("head_bucket", "s3:ListBucket"),
        ("list_objects_v2", "s3:ListBucket"),
        ("head_object", "s3:GetObject"),
        ("get_object", "s3:GetObject"),
        ("put_object", "s3:PutObject"),
        ("create_multipart_upload", "s3:PutObject"),
        ("upload_part #7", "s3:PutObject"),
        ("complete_multipart_upload", "s3:PutObject"),
        ("abort_multipart_upload", "s3:AbortMultipartUpload"),
        ("put_object_tagging", "s3:PutObjectTagging"),
        ("delete_objects", "s3:DeleteObject"),
        ("create_bucket", "s3:CreateBucket"),
        ("something_new", "something_new"),
    ],
)
def test_each_request_names_its_iam_action(operation, action):
    assert s3_action(operation) == action
