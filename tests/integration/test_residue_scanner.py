"""The residue scanner finds what is planted, wherever it is planted, and nothing else: a value
put in through the API (rows of every kind, any tenant), objects in the buckets (plain, gzipped,
inside a DOCX), export files and log text."""

import gzip
import io
import uuid

import docx
import pytest

from tests.helpers import call_api
from tests.residue import scan, scan_blob, scan_database


def planted() -> str:
    return f"residue-{uuid.uuid4().hex}"


def test_a_value_stored_through_the_api_is_found_in_its_rows_for_any_tenant(configured, database_url, tenant):
    value, other = planted(), planted()
    status, body = call_api(
        "POST",
        "/v1/memories",
        tenant,
        {"label": "Release cadence", "definition": f"Releases ship on Tuesdays, ticket {value}."},
    )
    assert status == 201, body
    hits = scan_database(database_url, [value, other])
    assert hits, "the planted value lives in the memory rows"
    assert {h.needle for h in hits} == {value}
    tables = {h.where for h in hits}
    assert "table:public.memories" in tables
    assert any(h.key and h.field == "definition" for h in hits if h.where == "table:public.memories")
    # case-folded: an upper-cased copy is still residue
    assert {h.needle for h in scan_database(database_url, [value.upper()])} == {value.upper()}


def test_objects_files_and_logs_are_searched_through_gzip_and_docx(configured, s3, local_aws, tmp_path):
    plain, zipped, in_docx, in_file, in_log, absent = (planted() for _ in range(6))
    bucket = local_aws.cold_bucket
    prefix = f"residue-test/{uuid.uuid4().hex}"
    s3.put_object(Bucket=bucket, Key=f"{prefix}/plain.txt", Body=f"x {plain} y".encode())
    s3.put_object(Bucket=bucket, Key=f"{prefix}/cold.json.gz", Body=gzip.compress(f'{{"d": "{zipped}"}}'.encode()))
    document = docx.Document()
    document.add_paragraph(f"The password is {in_docx}.")
    buffer = io.BytesIO()
    document.save(buffer)
    s3.put_object(Bucket=local_aws.upload_bucket, Key=f"uploads/{prefix}/notes.docx", Body=buffer.getvalue())
    export = tmp_path / "export" / "memories"
    export.mkdir(parents=True)
    (export / "a.md").write_text(f"---\nlabel: x\n---\n{in_file}\n")
    needles = [plain, zipped, in_docx, in_file, in_log, absent]
    hits = scan(
        needles,
        s3=s3,
        buckets=[bucket, local_aws.upload_bucket],
        paths=[tmp_path / "export"],
        logs={"api": f"INFO saved {in_log}"},
    )
    found = {h.needle: h for h in hits}
    assert set(found) == {plain, zipped, in_docx, in_file, in_log}
    assert found[plain].key == f"{prefix}/plain.txt"
    assert found[zipped].key == f"{prefix}/cold.json.gz"
    assert found[in_docx].where == f"s3:{local_aws.upload_bucket}" and "word/document.xml" in found[in_docx].field
    assert found[in_file].field.endswith("a.md") or found[in_file].key.endswith("a.md")
    assert found[in_log].where == "log:api"
    for key in (f"{prefix}/plain.txt", f"{prefix}/cold.json.gz"):
        s3.delete_object(Bucket=bucket, Key=key)
    s3.delete_object(Bucket=local_aws.upload_bucket, Key=f"uploads/{prefix}/notes.docx")


def test_a_multiline_value_is_found_in_json_escaped_form_and_empty_needles_are_refused():
    key = "-----BEGIN PRIVATE KEY-----\nMIIEvQIBADANBg\n-----END PRIVATE KEY-----"
    assert scan_blob(
        "s3:b", "k", b'{"text": "-----BEGIN PRIVATE KEY-----\\nMIIEvQIBADANBg\\n-----END PRIVATE KEY-----"}', [key]
    )
    assert scan_blob("s3:b", "k", b"nothing here", [key]) == []
    with pytest.raises(ValueError):
        scan_blob("s3:b", "k", b"x", ["", "  "])
