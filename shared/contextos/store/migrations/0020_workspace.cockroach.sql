


CREATE OR REPLACE FUNCTION memory_ids_of_other_tenants(ids uuid[]) RETURNS SETOF uuid
LANGUAGE sql STABLE AS $$
    SELECT DISTINCT m.id FROM memories m
    WHERE m.id = ANY(ids) AND m.tenant_id IS DISTINCT FROM current_setting('app.tenant_id', true)
$$;
GRANT EXECUTE ON FUNCTION memory_ids_of_other_tenants(uuid[]) TO contextos_app;
