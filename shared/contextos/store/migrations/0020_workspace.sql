-- 0020: what the markdown workspace (S10) needs for a faithful round trip and for edits.
-- The scope columns come from 0018; this adds the revisions an edit keeps and the foreign-id check.

-- An edited memory keeps what it said before: one row per replaced version.
CREATE TABLE IF NOT EXISTS memory_revisions (
    tenant_id  text NOT NULL,
    memory_id  uuid NOT NULL,
    version    integer NOT NULL,
    label      text NOT NULL,
    definition text NOT NULL,
    type       text NOT NULL,
    importance smallint NOT NULL,
    fields     jsonb NOT NULL DEFAULT '{}'::jsonb,  -- the other editable fields as they were
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

-- Which of these ids another tenant holds: an imported file must not carry another tenant's
-- memory id. Row-level security hides other tenants, so this one answer runs as the owner and
-- says only yes or no per id (ids are random UUIDs: nothing to enumerate).
CREATE OR REPLACE FUNCTION memory_ids_of_other_tenants(ids uuid[]) RETURNS SETOF uuid
LANGUAGE sql STABLE SECURITY DEFINER SET search_path = public AS $$
    SELECT DISTINCT m.id FROM memories m
    WHERE m.id = ANY(ids) AND m.tenant_id IS DISTINCT FROM current_setting('app.tenant_id', true)
$$;
REVOKE ALL ON FUNCTION memory_ids_of_other_tenants(uuid[]) FROM PUBLIC;
GRANT EXECUTE ON FUNCTION memory_ids_of_other_tenants(uuid[]) TO contextos_app;
