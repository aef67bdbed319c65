"""The audit log is a hash chain per tenant (S3): every writer is chained by the database, and
``contextos audit verify`` finds an edited, deleted, re-ordered or inserted entry.

Tampering needs the table owner with the append-only trigger out of the way
(``session_replication_role = replica`` skips triggers for that session only): exactly the
attacker the chain exists to expose.
"""

import itertools
import threading
from contextlib import contextmanager

import psycopg
import pytest
from contextos import container
from contextos.cli import main as cli_main
from contextos.services.governance import GENESIS_HASH, entry_hash


def write_entries(tenant: str, n: int, *, actor: str = "tests") -> None:
    with container.database().tenant_tx(tenant) as conn:
        for i in range(n):
            conn.execute(
                "INSERT INTO audit_log (tenant_id, actor, action, reason, details) VALUES (%s, %s, 'admitted', %s, %s)",
                [tenant, actor, f"entry {i}", psycopg.types.json.Jsonb({"n": i, "note": "ünïcode ✓"})],
            )


@contextmanager
def as_owner_without_triggers(database_url: str):
    with psycopg.connect(database_url, autocommit=True) as conn:
        conn.execute("SET session_replication_role = replica")
        yield conn


def chain(tenant: str) -> list[dict]:
    return container.governance().governance.audit_page(tenant, after=0, limit=10_000)


@pytest.fixture
def ten_entries(configured, tenant):
    write_entries(tenant, 10)
    return tenant


def test_every_insert_is_chained_by_the_database(ten_entries):
    rows = chain(ten_entries)
    assert [r["chain_seq"] for r in rows] == list(range(1, 11))
    assert rows[0]["prev_hash"] == GENESIS_HASH
    for before, after in itertools.pairwise(rows):
        assert after["prev_hash"] == before["hash"]
    assert all(entry_hash(r) == r["hash"] for r in rows)  # Python rebuilds the trigger's canonical text
    head = container.governance().governance.audit_head(ten_entries)
    assert (head["chain_seq"], head["hash"]) == (10, rows[-1]["hash"])


def test_an_intact_chain_verifies(ten_entries):
    report = container.governance().verify(ten_entries)
    assert report.ok and report.entries == 10 and report.problems == []


def test_a_writer_cannot_choose_its_own_chain_values(configured, tenant):
    with container.database().tenant_tx(tenant) as conn:
        conn.execute(
            """INSERT INTO audit_log (tenant_id, actor, action, chain_seq, prev_hash, hash)
               VALUES (%s, 'mallory', 'admitted', 99, 'forged', 'forged')""",
            [tenant],
        )
    (row,) = chain(tenant)
    assert row["chain_seq"] == 1 and row["prev_hash"] == GENESIS_HASH and row["hash"] != "forged"
    assert container.governance().verify(tenant).ok


def test_concurrent_writers_of_one_tenant_form_one_unbroken_chain(configured, tenant):
    threads = [threading.Thread(target=write_entries, args=(tenant, 15), kwargs={"actor": f"w{i}"}) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    rows = chain(tenant)
    assert [r["chain_seq"] for r in rows] == list(range(1, 61))
    assert container.governance().verify(tenant).ok


def test_tenants_have_separate_chains(configured, tenant):
    other = "other-" + tenant
    write_entries(tenant, 3)
    write_entries(other, 2)
    assert [r["chain_seq"] for r in chain(other)] == [1, 2]
    assert container.governance().verify(tenant).ok and container.governance().verify(other).ok


def test_the_application_role_cannot_move_the_head(configured, tenant):
    write_entries(tenant, 1)
    with pytest.raises(psycopg.errors.InsufficientPrivilege), container.database().tenant_tx(tenant) as conn:
        conn.execute("UPDATE audit_chain_heads SET chain_seq = 0 WHERE tenant_id = %s", [tenant])


def kinds(tenant: str) -> set[str]:
    report = container.governance().verify(tenant)
    assert not report.ok
    return {p.kind for p in report.problems}


def test_verify_detects_an_edited_entry(ten_entries, database_url):
    with as_owner_without_triggers(database_url) as conn:
        conn.execute(
            "UPDATE audit_log SET reason = 'nothing to see' WHERE tenant_id = %s AND chain_seq = 4", [ten_entries]
        )
    assert kinds(ten_entries) == {"edited"}


def test_verify_detects_an_edited_detail_even_with_its_hash_recomputed(ten_entries, database_url):
    with as_owner_without_triggers(database_url) as conn:
        conn.execute(
            """UPDATE audit_log SET details = '{"n": 99}',
                   hash = encode(sha256(convert_to(audit_log_canonical(prev_hash, tenant_id, chain_seq, id, at, actor,
                       action, memory_id, reason, '{"n": 99}'::jsonb), 'UTF8')), 'hex')
               WHERE tenant_id = %s AND chain_seq = 5""",
            [ten_entries],
        )
    assert "reordered" in kinds(ten_entries)  # entry 6 no longer follows entry 5


def test_verify_detects_a_deleted_entry(ten_entries, database_url):
    with as_owner_without_triggers(database_url) as conn:
        conn.execute("DELETE FROM audit_log WHERE tenant_id = %s AND chain_seq = 3", [ten_entries])
    assert kinds(ten_entries) == {"missing"}


def test_verify_detects_deleted_entries_at_the_end(ten_entries, database_url):
    with as_owner_without_triggers(database_url) as conn:
        conn.execute("DELETE FROM audit_log WHERE tenant_id = %s AND chain_seq > 8", [ten_entries])
    assert kinds(ten_entries) == {"head_mismatch"}


def test_verify_detects_a_reordering(ten_entries, database_url):
    with as_owner_without_triggers(database_url) as conn:
        conn.execute(
            """UPDATE audit_log SET chain_seq = CASE chain_seq WHEN 6 THEN -7 ELSE -6 END
               WHERE tenant_id = %s AND chain_seq IN (6, 7)""",
            [ten_entries],
        )
        conn.execute(
            "UPDATE audit_log SET chain_seq = -chain_seq WHERE tenant_id = %s AND chain_seq < 0", [ten_entries]
        )
    assert {"reordered", "edited"} <= kinds(ten_entries)


def test_verify_detects_a_backdated_entry(ten_entries, database_url):
    with as_owner_without_triggers(database_url) as conn:
        conn.execute(
            "UPDATE audit_log SET at = at - interval '1 day' WHERE tenant_id = %s AND chain_seq = 2", [ten_entries]
        )
    assert kinds(ten_entries) == {"edited"}


def test_verify_detects_an_entry_inserted_around_the_trigger(ten_entries, database_url):
    with as_owner_without_triggers(database_url) as conn:
        conn.execute(
            "INSERT INTO audit_log (tenant_id, actor, action) VALUES (%s, 'mallory', 'promoted')", [ten_entries]
        )
    assert kinds(ten_entries) == {"unchained"}


def test_verify_detects_an_entry_inserted_in_the_middle_with_a_valid_looking_hash(ten_entries, database_url):
    rows = chain(ten_entries)
    with as_owner_without_triggers(database_url) as conn:
        # Make room after entry 4, then forge entry 5 correctly chained to entry 4.
        conn.execute(
            "UPDATE audit_log SET chain_seq = chain_seq + 1000 WHERE tenant_id = %s AND chain_seq > 4", [ten_entries]
        )
        conn.execute(
            "UPDATE audit_log SET chain_seq = chain_seq - 999 WHERE tenant_id = %s AND chain_seq > 1000", [ten_entries]
        )
        conn.execute(
            """INSERT INTO audit_log (tenant_id, actor, action, chain_seq, prev_hash, hash)
               SELECT %(t)s, 'mallory', 'promoted', 5, %(prev)s,
                      encode(sha256(convert_to(audit_log_canonical(%(prev)s, %(t)s, 5, gen_random_uuid(), now(),
                          'mallory', 'promoted', NULL, NULL, '{}'::jsonb), 'UTF8')), 'hex')""",
            {"t": ten_entries, "prev": rows[3]["hash"]},
        )
    found = kinds(ten_entries)
    assert "edited" in found  # every shifted entry's number is part of its hash
    assert "head_mismatch" in found or "reordered" in found


def test_the_cli_exits_nonzero_for_a_broken_chain_and_zero_for_an_intact_one(ten_entries, database_url, capsys):
    assert cli_main(["audit", "verify", "--tenant", ten_entries]) == 0
    with as_owner_without_triggers(database_url) as conn:
        conn.execute("DELETE FROM audit_log WHERE tenant_id = %s AND chain_seq = 1", [ten_entries])
    assert cli_main(["audit", "verify", "--tenant", ten_entries]) == 1
    assert "missing" in capsys.readouterr().err
