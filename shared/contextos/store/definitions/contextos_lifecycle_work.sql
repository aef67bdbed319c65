-- dialect: postgres
-- Which tenants the lifecycle scan has work for, stage by stage, in one statement: a few index
-- probes per tenant (the same partial indexes the stages walk), so a scan over thousands of
-- tenants spends its transactions on the tenants that have something due and not one
-- transaction per stage per tenant. Each flag mirrors its stage's own predicate; a stage flagged
-- false would have found nothing. SECURITY DEFINER: the scan's question spans tenants, and the
-- answer holds tenant ids and flags only.
CREATE OR REPLACE FUNCTION contextos_lifecycle_work(
    superseded_s double precision, ttl_s double precision, stats_min bigint
)
RETURNS TABLE (tenant_id text, materialize boolean, archive boolean, expire boolean, settle boolean,
               text_statistics boolean)
LANGUAGE sql STABLE SECURITY DEFINER
SET search_path = public, pg_temp
AS $fn$
    SELECT t.tenant_id,
           EXISTS (SELECT 1 FROM memories m
                   WHERE m.tenant_id = t.tenant_id AND m.state = 'active' AND m.tier = 'hot'
                     AND m.next_transition_at <= now()),
           EXISTS (SELECT 1 FROM memories m
                   WHERE m.tenant_id = t.tenant_id AND m.tier = 'hot' AND (m.band = 'forgotten' OR m.state = 'superseded')
                     AND NOT m.protected AND NOT m.always_load
                     AND ((m.state = 'active' AND m.band = 'forgotten')
                          OR (m.state = 'superseded'
                              AND COALESCE(m.superseded_at, m.updated_at) < now() - make_interval(secs => superseded_s)))),
           EXISTS (SELECT 1 FROM memories m WHERE m.tenant_id = t.tenant_id AND m.expires_at <= now())
           OR EXISTS (SELECT 1 FROM memories m
                      WHERE m.tenant_id = t.tenant_id AND m.type = 'scratch' AND m.expires_at IS NULL
                        AND m.created_at <= now() - make_interval(secs => ttl_s)),
           EXISTS (SELECT 1 FROM memory_vectors v WHERE v.tenant_id = t.tenant_id AND v.searchable AND NOT v.indexed),
           t.hot_memories >= stats_min
           OR EXISTS (SELECT 1 FROM text_tenant_stats s WHERE s.tenant_id = t.tenant_id)
           OR EXISTS (SELECT 1 FROM text_common_lexemes c WHERE c.tenant_id = t.tenant_id)
    FROM tenants t
    ORDER BY t.tenant_id
$fn$;
REVOKE ALL ON FUNCTION contextos_lifecycle_work(double precision, double precision, bigint) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION contextos_lifecycle_work(double precision, double precision, bigint) TO contextos_app;
-- dialect: end
