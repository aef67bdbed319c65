"""The composition root: cached factories that pick each port's implementation from settings.

Warm Lambda invocations reuse the pool, the clients and the loaded model; tests and the
local stack call ``reset()`` after changing the environment.
"""

from __future__ import annotations

from functools import cache, lru_cache
from typing import TYPE_CHECKING, Any, cast

from contextos.current_settings import get_settings, reset_settings

if TYPE_CHECKING:  # each factory imports its implementation: a function loads only what its path uses
    from contextos.embedding import Embedder
    from contextos.extraction import ConceptExtractor
    from contextos.judge import Judge
    from contextos.ports.admission import AdmissionPort
    from contextos.ports.documents import DocumentPort
    from contextos.ports.lifecycle import TenantPort
    from contextos.ports.management import ManagementPort
    from contextos.ports.reads import ReadPort
    from contextos.ports.unit_of_work import UnitOfWork
    from contextos.services.contradiction import ContradictionGate
    from contextos.store.db import Database
    from contextos.store.stores import Stores


@cache
def aws_client(service: str) -> Any:
    """One boto3 client per service; adaptive retries back off on throttling."""
    import boto3
    from botocore.config import Config

    return boto3.client(
        service,
        region_name=get_settings().region,
        config=Config(retries={"mode": "adaptive", "max_attempts": 5}, max_pool_connections=32),
    )


@lru_cache(maxsize=1)
def database() -> Database:
    from contextos.store.db import open_database

    return open_database(get_settings())


@lru_cache(maxsize=1)
def stores() -> Stores:
    """The aggregate stores the factories below wire, side by side (tests, benchmarks, tools);
    services take the ports."""
    from contextos.store.admission import AdmissionStore
    from contextos.store.documents import DocumentStore
    from contextos.store.management import ManagementStore
    from contextos.store.reads import ReadStore
    from contextos.store.stores import Stores
    from contextos.store.tenants import TenantStore
    from contextos.store.unit_of_work import UnitOfWorkStore

    # the very objects the factories wire (each factory builds its store's class)
    return Stores(
        db=database(),
        documents=cast(DocumentStore, documents()),
        admission=cast(AdmissionStore, admission_store()),
        reads=cast(ReadStore, reads()),
        tenants=cast(TenantStore, tenants()),
        management=cast(ManagementStore, management()),
        work=cast(UnitOfWorkStore, unit_of_work()),
    )


@lru_cache(maxsize=1)
def contradiction_gate() -> ContradictionGate:
    from contextos.services.contradiction import ContradictionGate

    settings = get_settings()
    cfg = settings.governance
    prejudges = cfg.prejudge if cfg.prejudge is not None else settings.judge == "bedrock"
    return ContradictionGate(judge(), cfg, prejudges=prejudges)


@lru_cache(maxsize=1)
def documents() -> DocumentPort:
    from contextos.store.documents import DocumentStore

    return DocumentStore(database())


@lru_cache(maxsize=1)
def admission_store() -> AdmissionPort:
    from contextos.store.admission import AdmissionStore

    settings = get_settings()
    return AdmissionStore(database(), settings.decay, settings.merge, gate=contradiction_gate())


@lru_cache(maxsize=1)
def reads() -> ReadPort:
    from contextos.store.reads import ReadStore

    return ReadStore(database(), get_settings().decay)


@lru_cache(maxsize=1)
def tenants() -> TenantPort:
    from contextos.store.tenants import TenantStore

    return TenantStore(database())


@lru_cache(maxsize=1)
def management() -> ManagementPort:
    from contextos.store.management import ManagementStore

    return ManagementStore(database(), get_settings().decay)


@lru_cache(maxsize=1)
def unit_of_work() -> UnitOfWork:
    from contextos.store.unit_of_work import UnitOfWorkStore

    return UnitOfWorkStore(database())


def reembed_store():  # -> ReembedPort
    from contextos.store.reembed import ReembedStore

    return ReembedStore(database())


@lru_cache(maxsize=1)
def embedder() -> Embedder:
    settings = get_settings()
    match settings.embedder:
        case "bedrock":
            from contextos.embedding.bedrock import BedrockTitanEmbedder

            return BedrockTitanEmbedder(
                aws_client("bedrock-runtime"),
                model_id=settings.bedrock.embedding_model_id,
                dimensions=settings.bedrock.embedding_dimensions,
            )
        case _:
            from contextos.embedding.local import LocalMiniLMEmbedder

            return LocalMiniLMEmbedder()


@lru_cache(maxsize=1)
def extractor() -> ConceptExtractor:
    settings = get_settings()
    match settings.extractor:
        case "bedrock":
            from contextos.extraction.bedrock import BedrockConceptExtractor

            return BedrockConceptExtractor(
                aws_client("bedrock-runtime"),
                model_id=settings.bedrock.extractor_model_id,
                max_tokens=settings.bedrock.max_tokens,
                max_concepts=settings.extraction.max_concepts_per_call,
            )
        case _:
            from contextos.extraction.local import LocalConceptExtractor

            return LocalConceptExtractor(
                max_concepts=settings.extraction.local_max_concepts,
                definition_chars=settings.extraction.local_definition_chars,
                generic_modifiers=settings.extraction.generic_modifiers,
            )


@lru_cache(maxsize=1)
def judge() -> Judge:
    settings = get_settings()
    match settings.judge:
        case "bedrock":
            from contextos.judge.bedrock import BedrockJudge

            return BedrockJudge(
                aws_client("bedrock-runtime"),
                model_id=settings.bedrock.judge_model_id,
                concurrency=settings.governance.judge_concurrency,
            )
        case _:
            from contextos.judge.local import LocalHeuristicJudge

            return LocalHeuristicJudge()


@lru_cache(maxsize=1)
def ingestion():  # -> IngestionService
    from contextos.adapters import S3BlobStore, SqsQueue
    from contextos.services.document_pipeline import DocumentPipeline
    from contextos.services.ingestion import IngestionService

    settings = get_settings()
    if not settings.ingest_queue_url:
        raise RuntimeError("CONTEXTOS_INGEST_QUEUE_URL is not set")
    blobs = S3BlobStore(aws_client("s3"))
    return IngestionService(
        settings=settings,
        documents=documents(),
        blobs=blobs,
        queue=SqsQueue(aws_client("sqs"), settings.ingest_queue_url),
        pipeline=DocumentPipeline(
            settings=settings,
            documents=documents(),
            admissions=admission_store(),
            blobs=blobs,
            extractor=extractor(),
            embedder=embedder(),
            firewall=firewall(),
        ),
        firewall=firewall(),
        workspace_upload=lambda tenant, key, name, data, ceiling: workspace().ingest_upload(
            tenant, key, name, data, ceiling=ceiling
        ),
    )


@lru_cache(maxsize=1)
def keys():  # -> KeyService
    from contextos.services.keys import KeyService
    from contextos.store.keys import KeyStore

    return KeyService(KeyStore(database()))


@lru_cache(maxsize=1)
def memories():  # -> MemoryService
    from contextos.adapters import S3BlobStore
    from contextos.services.memories import MemoryService

    settings = get_settings()
    return MemoryService(
        reads=reads(),
        documents=documents(),
        management=management(),
        work=unit_of_work(),
        decay=settings.decay,
        settings=settings,
        embedder_factory=embedder,
        blobs=S3BlobStore(aws_client("s3")),
        firewall=firewall(),
    )


@lru_cache(maxsize=1)
def retrieval():  # -> RetrievalService
    from contextos.services.retrieval import RetrievalService

    return RetrievalService(
        settings=get_settings(),
        store=reads(),
        embedder=embedder(),
        recent_turns=conversations().recent_turns,
        cold=cold_storage(),
        versions=management(),
    )


@lru_cache(maxsize=1)
def admission():  # -> Admission
    from contextos.services.admission import Admission

    return Admission(settings=get_settings(), store=admission_store(), embedder=embedder())


@lru_cache(maxsize=1)
def conversations():  # -> ConversationService
    """Sessions (S8). Extraction and admission are bound lazily: the API and the sweeper never use them."""
    from contextos.adapters import SqsQueue
    from contextos.services.conversations import ConversationService
    from contextos.store.conversations import ConversationStore

    settings = get_settings()
    queue = SqsQueue(aws_client("sqs"), settings.conversation_queue_url) if settings.conversation_queue_url else None
    return ConversationService(
        settings=settings,
        store=ConversationStore(database()),
        tenant_ids=tenants().tenant_ids,
        firewall=firewall(),
        queue=queue,
        extractor=extractor,
        admission=admission,
    )


@lru_cache(maxsize=1)
def lifecycle_store():  # -> LifecycleStore
    from contextos.store.lifecycle import LifecycleStore

    settings = get_settings()
    return LifecycleStore(database(), settings.decay, settings.lifecycle)


@lru_cache(maxsize=1)
def cold_storage():  # -> ColdStorage
    from contextos.adapters import S3BlobStore
    from contextos.services.cold import ColdStorage

    settings = get_settings()
    return ColdStorage(
        store=lifecycle_store(),
        blobs=S3BlobStore(aws_client("s3")),
        bucket=settings.cold_bucket,
        settings=settings.lifecycle,
    )


@lru_cache(maxsize=1)
def event_relay():  # -> EventRelay
    from contextos.adapters import EventBridgeBus
    from contextos.services.events import EventRelay
    from contextos.store.events import EventOutboxStore

    return EventRelay(
        EventOutboxStore(database()),
        EventBridgeBus(aws_client("events")),
        get_settings().event_bus_name,
        tenants().tenant_ids,
    )


@lru_cache(maxsize=1)
def lifecycle():  # -> LifecycleService
    from contextos.services.lifecycle import LifecycleService
    from contextos.store.vector_indexes import TenantVectorIndexes

    cfg = get_settings().lifecycle
    return LifecycleService(
        tenants=tenants(),
        vectors=admission_store(),
        lifecycle=lifecycle_store(),
        cold=cold_storage(),
        settings=cfg,
        housekeeping=[idempotency_store().purge_expired],
        vector_indexes=TenantVectorIndexes(
            database(),
            build_at=cfg.vector_index_min_memories,
            drop_below=cfg.vector_index_drop_below,
            max_builds=cfg.vector_index_max_builds,
        ),
    )


@lru_cache(maxsize=1)
def reports():  # -> ReportService
    from contextos.services.reports import ReportService
    from contextos.store.reports import ReportStore

    settings = get_settings()
    return ReportService(
        settings=settings,
        store=ReportStore(database(), settings.decay, settings.reports),
        judge=judge(),
        tenant_ids=tenants().tenant_ids,
    )


def firewall():  # -> Firewall
    from contextos.services.firewall import Firewall
    from contextos.store.privacy import PrivacyStore

    return Firewall(PrivacyStore(database()))


@lru_cache(maxsize=1)
def governance():  # -> GovernanceService
    from contextos.services.governance import GovernanceService
    from contextos.store.governance import GovernanceStore

    return GovernanceService(
        settings=get_settings(),
        store=admission_store(),
        governance=GovernanceStore(database()),
        embedder=embedder(),
        firewall=firewall(),
    )


def reset() -> None:
    """Drop every cached object (closing the pool) so the next call reads settings afresh."""
    if database.cache_info().currsize:
        database().close()
    for factory in (
        aws_client,
        database,
        stores,
        embedder,
        extractor,
        judge,
        ingestion,
        keys,
        memories,
        retrieval,
        lifecycle,
        event_relay,
        lifecycle_store,
        cold_storage,
        idempotency_store,
        reports,
        admission,
        conversations,
        governance,
        workspace,
        uploads,
        erasure,
        contradiction_gate,
        documents,
        admission_store,
        reads,
        tenants,
        management,
        unit_of_work,
    ):
        factory.cache_clear()
    reset_settings()


@lru_cache(maxsize=1)
def idempotency_store():  # -> PostgresPersistenceLayer
    """The Powertools idempotency store of the ingest function, on the shared database pool.

    Given the ``database`` factory rather than a pool: the handler binds this store at import
    time, and resolving the pool per call opens nothing then and follows ``reset()``. Powertools
    configures a layer once, with the first config it sees: one layer per idempotent function.
    """
    from contextos.store.idempotency import PostgresPersistenceLayer

    return PostgresPersistenceLayer(database)


@lru_cache(maxsize=1)
def workspace():  # -> WorkspaceService
    from contextos.services.workspace import WorkspaceService
    from contextos.store.workspace import WorkspaceStore

    return WorkspaceService(
        settings=get_settings(),
        reads=WorkspaceStore(database()),
        documents=documents(),
        admissions=admission_store(),
        embedders=embedder,
        firewall=firewall(),
        submit_document=lambda tenant, request: ingestion().submit(tenant, request),
    )


@lru_cache(maxsize=1)
def erasure():  # -> ErasureService
    from contextos.adapters import S3BlobStore
    from contextos.services.erasure import ErasureService

    return ErasureService(settings=get_settings(), work=unit_of_work(), blobs=S3BlobStore(aws_client("s3")))


@lru_cache(maxsize=1)
def uploads():  # -> UploadService
    from contextos.adapters import S3BlobStore
    from contextos.services.uploads import UploadService

    return UploadService(settings=get_settings(), presigner=S3BlobStore(aws_client("s3")), tickets=documents())


def forecast():  # -> ForecastService
    from contextos.services.forecast import ForecastService
    from contextos.store.forecast import ForecastStore

    settings = get_settings()
    return ForecastService(store=ForecastStore(database(), settings.decay), decay=settings.decay)
