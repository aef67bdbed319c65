"""Row-level security is the second wall: a session without the tenant setting sees nothing."""

import psycopg
import pytest
from contextos import container
from contextos.models import DocumentCreate


@pytest.fixture
def documents_for_two_tenants(configured, tenant):
    service = container.ingestion()
    service.submit(tenant, DocumentCreate(text="Alpha tenant's private runbook about the payment service."))
    service.submit("other-" + tenant, DocumentCreate(text="Beta tenant's notes about the search cluster."))
    return tenant


def test_a_session_without_the_tenant_setting_sees_no_rows(documents_for_two_tenants, database_url):
    with psycopg.connect(database_url, autocommit=True) as conn:
        assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] >= 2  # the owner sees them
        conn.execute("SET ROLE contextos_app")
        assert conn.execute("SELECT count(*) FROM documents").fetchone()[0] == 0
        assert conn.execute("SELECT count(*) FROM memories").fetchone()[0] == 0


def test_a_tenant_transaction_sees_only_its_own_rows(documents_for_two_tenants):
    tenant = documents_for_two_tenants
    with container.database().tenant_tx(tenant) as conn:
        tenants = {r["tenant_id"] for r in conn.execute("SELECT tenant_id FROM documents")}
    assert tenants == {tenant}


def test_rows_cannot_be_written_for_another_tenant(configured, tenant):
    with pytest.raises(psycopg.errors.InsufficientPrivilege), container.database().tenant_tx(tenant) as conn:
        conn.execute("INSERT INTO documents (tenant_id, content_hash) VALUES ('someone-else', 'h')")


def test_the_tenant_setting_does_not_leak_to_the_next_transaction_on_a_pooled_connection(configured, tenant):
    db = container.database()
    with db.tenant_tx(tenant) as conn:
        assert conn.execute("SELECT current_setting('app.tenant_id', true) AS t").fetchone()["t"] == tenant
    with db.system_tx() as conn:
        assert conn.execute("SELECT current_setting('app.tenant_id', true) AS t").fetchone()["t"] in (None, "")


def test_the_audit_log_is_append_only_for_the_application_role(configured, tenant):
    db = container.database()
    with db.tenant_tx(tenant) as conn:
        conn.execute("INSERT INTO audit_log (tenant_id, actor, action) VALUES (%s, 'test', 'admitted')", [tenant])
    with pytest.raises(psycopg.errors.InsufficientPrivilege), db.tenant_tx(tenant) as conn:
        conn.execute("UPDATE audit_log SET action = 'rejected' WHERE tenant_id = %s", [tenant])
    with pytest.raises(psycopg.errors.InsufficientPrivilege), db.tenant_tx(tenant) as conn:
        conn.execute("DELETE FROM audit_log WHERE tenant_id = %s", [tenant])


def test_even_the_owner_cannot_rewrite_the_audit_log(configured, tenant, database_url):
    with container.database().tenant_tx(tenant) as conn:
        conn.execute("INSERT INTO audit_log (tenant_id, actor, action) VALUES (%s, 'test', 'admitted')", [tenant])
    with psycopg.connect(database_url, autocommit=True) as conn, pytest.raises(psycopg.errors.InsufficientPrivilege):
        conn.execute("UPDATE audit_log SET actor = 'mallory' WHERE tenant_id = %s", [tenant])


def test_the_text_search_function_sees_only_the_transactions_tenant(configured, tenant, local_embedder):
    from tests.integration.test_merging import candidates, store_concepts

    store = container.stores()
    spec = [("Quarantine rule", "Files that fail the virus scan go to the zx-7731 holding area.", "rule")]
    store_concepts(store, tenant, candidates(local_embedder, spec))
    store_concepts(store, "other-" + tenant, candidates(local_embedder, spec))
    assert len(store.reads.text_search(tenant, [["zx-7731"]], k=10, cap=100)) == 1
    with container.database().system_tx() as conn:  # no tenant setting: the function finds nothing
        rows = conn.execute(
            "SELECT * FROM contextos_text_search_phrases(ARRAY['zx-7731'], ARRAY['zx 7731'], ARRAY[1], 10, 100)"
        ).fetchall()
    assert rows == []
    with container.database().tenant_tx("nobody-" + tenant) as conn:  # another tenant's setting: nothing either
        rows = conn.execute(
            "SELECT * FROM contextos_text_search_phrases(ARRAY['zx-7731'], ARRAY['zx 7731'], ARRAY[1], 10, 100)"
        ).fetchall()
    assert rows == []


def test_a_failed_pipelined_read_leaves_its_connection_idle_and_without_a_tenant(configured, tenant):
    db = container.database()
    with pytest.raises(psycopg.errors.DivisionByZero):
        db.tenant_read(tenant, ("SELECT 1/0", None))
    assert db.tenant_read(tenant, ("SELECT current_setting('app.tenant_id', true) AS t", None)) == [{"t": tenant}]
    with db.system_tx() as conn:  # the setting was the transaction's only
        assert conn.execute("SELECT current_setting('app.tenant_id', true) AS t").fetchone()["t"] in ("", None)
