import os
import subprocess
import sys

from contextos.current_settings import get_settings, reset_settings
from contextos.settings import Settings


def test_settings_are_read_lazily_and_cached(monkeypatch):
    reset_settings()
    monkeypatch.setenv("CONTEXTOS_RETRIEVAL__MAX_MEMORIES", "33")
    first = get_settings()
    assert first.retrieval.max_memories == 33
    monkeypatch.setenv("CONTEXTOS_RETRIEVAL__MAX_MEMORIES", "44")
    assert get_settings() is first
    reset_settings()
    assert get_settings().retrieval.max_memories == 44
    reset_settings()


def test_every_spec_default_lives_in_configuration():
    s = Settings()
    assert (s.decay.rate_high_importance, s.decay.rate_mid_importance, s.decay.rate_low_importance) == (
        0.10,
        0.15,
        0.20,
    )
    assert (s.decay.band_strong, s.decay.band_fading, s.decay.band_forgotten) == (0.70, 0.40, 0.10)
    standard = s.retrieval.recipe("standard")
    assert (standard.weight_semantic, standard.weight_strength, standard.weight_recency) == (0.4, 0.3, 0.3)
    debug = s.retrieval.recipe("intent_adaptive").profiles["debug"]
    assert list(debug.model_dump().values()) == [0.20, 0.30, 0.30, 0.10, 0.05, 0.05]
    assert (s.retrieval.max_memories, s.retrieval.max_share_per_source, s.retrieval.vector_k) == (20, 0.6, 20)


def test_the_embedding_dimension_follows_the_embedder():
    assert Settings(embedder="local").embedding_dimensions == 384
    assert Settings(embedder="bedrock").embedding_dimensions == 1024


def test_importing_the_package_reads_no_settings_and_needs_no_aws_credentials():
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_", "CONTEXTOS_"))}
    env["CONTEXTOS_DATABASE_DIALECT"] = "not-a-dialect"  # would fail validation if read at import
    code = (
        "import contextos.api.app, contextos.container, contextos.services.ingestion, contextos.observability as o;"
        "o.logger.info('ok'); o.metrics.add_metric(name='X', unit='Count', value=1); print('imported')"
    )
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert "imported" in out.stdout


def test_a_database_secret_becomes_a_tls_dsn_and_the_proxy_host_wins():
    from contextos.store.db import conninfo_from_secret

    secret = {"username": "app", "password": "p@ss/word", "host": "cluster.local", "port": 5432, "dbname": "ctx"}
    assert conninfo_from_secret(secret) == "postgresql://app:p%40ss%2Fword@cluster.local:5432/ctx?sslmode=require"
    assert "@proxy.local:5432/" in conninfo_from_secret(secret, host="proxy.local")
    assert conninfo_from_secret({"url": "postgresql://root@crdb:26257/ctx"}) == "postgresql://root@crdb:26257/ctx"


def test_recipes_are_data_that_the_environment_can_change(monkeypatch):
    monkeypatch.setenv("CONTEXTOS_RETRIEVAL__DEFAULT_RECIPE", "intent_adaptive")
    monkeypatch.setenv(
        "CONTEXTOS_RETRIEVAL__RECIPES",
        '{"mine": {"kind": "standard", "weight_semantic": 0.8, "weight_strength": 0.1, "weight_recency": 0.1}}',
    )
    s = Settings()
    assert s.retrieval.default_recipe == "intent_adaptive"
    assert s.retrieval.recipe("mine").weight_semantic == 0.8
