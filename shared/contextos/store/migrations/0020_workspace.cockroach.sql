-- 0020 (CockroachDB): the same columns and revisions table. The other-tenant id check is a
-- plain function here (no SECURITY DEFINER), so it sees only the caller's rows and finds none.

CREATE TABLE IF NOT EXISTS memory_revisions (
    tenant_id  text NOT NULL,
    memory_id  uuid NOT NULL,
    version    integer NOT NULL,
    label      text NOT NULL,
    definition text NOT NULL,
    type       text NOT NULL,
    importance smallint NOT NULL,
    fields     jsonb NOT NULL DEFAULT '{}'::jsonb,
    actor      text NOT NULL,
    replaced_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, memory_id, version),
    FOREIGN KEY (tenant_id, memory_id) REFERENCES memories (tenant_id, id) ON DELETE CASCADE
);
ALTER TABLE memory_revisions ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON memory_revisions;
CREATE POLICY tenant_isolation ON memory_revisions
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
GRANT SELECT, INSERT ON memory_revisions TO contextos_app;

CREATE OR REPLACE FUNCTION memory_ids_of_other_tenants(ids uuid[]) RETURNS SETOF uuid
LANGUAGE sql STABLE AS $$
    SELECT DISTINCT m.id FROM memories m
    WHERE m.id = ANY(ids) AND m.tenant_id IS DISTINCT FROM current_setting('app.tenant_id', true)
$$;
GRANT EXECUTE ON FUNCTION memory_ids_of_other_tenants(uuid[]) TO contextos_app;
