-- 0045: what a key may do and where (S11), and what a presigned upload carries (S7).
-- A key's verbs (NULL: its principal's defaults, contextos.access) and the scope its writes carry
-- and its reads are confined to.
ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS verbs text[];
ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS scope_user_id text;
ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS scope_agent_id text;
ALTER TABLE api_keys ADD COLUMN IF NOT EXISTS scope_tags text[] NOT NULL DEFAULT '{}';

-- An upload ticket: the object key the caller may PUT, the document id it was promised and the
-- provenance and scope of the credential that asked, which the ingest function applies when the
-- object lands (a dropped object without a ticket gets the bucket's configured provenance).
CREATE TABLE IF NOT EXISTS upload_tickets (
    tenant_id   text NOT NULL,
    object_key  text NOT NULL,
    document_id uuid NOT NULL,
    provenance  text NOT NULL,
    user_id     text,
    agent_id    text,
    tags        text[] NOT NULL DEFAULT '{}',
    created_at  timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (tenant_id, object_key)
);
ALTER TABLE upload_tickets ENABLE ROW LEVEL SECURITY;
DROP POLICY IF EXISTS tenant_isolation ON upload_tickets;
CREATE POLICY tenant_isolation ON upload_tickets
    USING (tenant_id = current_setting('app.tenant_id', true))
    WITH CHECK (tenant_id = current_setting('app.tenant_id', true));
GRANT SELECT, INSERT, UPDATE, DELETE ON upload_tickets TO contextos_app;

-- Erasing a tenant removes its keys (names and hashes included), not only revokes them.
GRANT DELETE ON api_keys TO contextos_app;
