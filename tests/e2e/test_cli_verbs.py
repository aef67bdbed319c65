"""The CLI's management verbs against the running local stack (through ``--api-url``) and the
configured database (keys, reembed), as a person would type them."""

import json

from contextos import container
from contextos.cli import main

from tests.e2e.test_local_stack import stack  # noqa: F401 - the module's running stack

KEY = "ctx_local_dev_key"


def run(capsys, *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    return code, capsys.readouterr().out


def test_search_and_the_memories_verbs(stack, capsys):  # noqa: F811
    api = ["--api-url", stack.api_url, "--api-key", KEY]
    from contextos import Client

    with Client(stack.api_url, api_key=KEY) as ctx:
        memory_id = str(ctx.add_memory("CLI pager rota", "The pager rota changes every Monday at noon.").memory_id)
    code, out = run(capsys, "search", "pager rota Monday", *api)
    assert code == 0 and memory_id in out
    code, out = run(capsys, "memories", "list", "--prefix", "cli pager", *api)
    assert code == 0 and memory_id in out and len(out.strip().splitlines()) == 1
    code, out = run(capsys, "memories", "edit", memory_id, "--importance", "9", "--protect", *api)
    assert code == 0 and json.loads(out)["version"] == 2
    code, out = run(capsys, "memories", "forget", memory_id, *api)
    assert code == 1  # protected
    code, out = run(capsys, "memories", "edit", memory_id, "--unprotect", "--unlock", *api)
    assert code == 0
    code, out = run(capsys, "memories", "forget", memory_id, "--reason", "cli test", *api)
    assert code == 0 and json.loads(out)["forgotten"] is True
    code, _ = run(capsys, "memories", "show", memory_id, *api)
    assert code == 1
    code, out = run(capsys, "memories", "restore", memory_id, *api)
    assert code == 0 and json.loads(out)["restored"] == "forget"
    code, out = run(capsys, "memories", "show", memory_id, *api)
    assert code == 0 and json.loads(out)["importance"] == 9


def test_keys_list_and_revoke(stack, capsys):  # noqa: F811
    key = container.keys().create("cli-keys", "to-revoke")
    assert container.keys().identify(key) is not None
    code, out = run(capsys, "keys", "list", "--tenant", "cli-keys")
    assert code == 0 and "to-revoke" in out and "live" in out and key not in out
    code, out = run(capsys, "keys", "revoke", "--tenant", "cli-keys", "--name", "to-revoke")
    assert code == 0 and "revoked 1" in out
    assert container.keys().identify(key) is None
    assert run(capsys, "keys", "revoke", "--tenant", "cli-keys", "--name", "to-revoke")[0] == 1


def test_reembed_gives_every_vector_the_configured_embedder_and_resumes(stack, capsys):  # noqa: F811
    from contextos import Client

    with Client(stack.api_url, api_key=KEY) as ctx:
        notes = [
            ("Vacuum schedule", "The nightly vacuum of the orders database runs at 02:00 UTC."),
            ("Kafka partition count", "The events topic has 48 partitions, one per consumer thread."),
            ("Redis eviction policy", "The session cache evicts the least recently used keys first."),
        ]
        ids = [ctx.add_memory(label, definition).memory_id for label, definition in notes]
    with container.database().tenant_tx("local") as conn:
        conn.execute("UPDATE memory_vectors SET embedder_id = 'old-model' WHERE memory_id = ANY(%s)", [ids])
    code, out = run(capsys, "reembed", "--tenant", "local", "--batch", "2")
    assert code == 0 and "re-embedded 3 memories" in out
    with container.database().tenant_tx("local") as conn:
        left = conn.execute("SELECT count(*) AS n FROM memory_vectors WHERE embedder_id = 'old-model'").fetchone()
    assert left["n"] == 0
    code, out = run(capsys, "reembed", "--tenant", "local")
    assert code == 0 and "re-embedded 0 memories" in out  # nothing left: a second run is a no-op


def test_bench_runs_a_named_benchmark_and_refuses_an_unknown_one(capsys):
    assert main(["bench", "no-such-benchmark"]) == 2
    assert "available:" in capsys.readouterr().err
    assert main(["bench", "retrieval_scoped", "--help"]) == 0
    assert "--large" in capsys.readouterr().out


def test_sessions_list_shows_status_and_counts(stack, capsys):  # noqa: F811
    from contextos import Client

    api = ["--api-url", stack.api_url, "--api-key", KEY]
    with Client(stack.api_url, api_key=KEY) as ctx:
        ctx.append_message("cli-listed", "user", "The CLI lists sessions.")
        ctx.append_message("cli-listed", "assistant", "It shows counts too.")
        ctx.end_session("cli-listed")
    code, out = run(capsys, "sessions", "list", "--status", "ended", *api)
    (line,) = [line for line in out.splitlines() if line.startswith("cli-listed ")]
    assert code == 0 and "[ended] 2 messages, 2 flushed" in line and "/1 done" in line
    code, out = run(capsys, "sessions", "list", "--status", "open", *api)
    assert code == 0 and "cli-listed " not in out
    code, out = run(capsys, "sessions", "list", "--limit", "1", *api)
    assert code == 0 and len(out.strip().splitlines()) == 1
