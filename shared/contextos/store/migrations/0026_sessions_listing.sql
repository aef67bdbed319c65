-- 0026: GET /v1/sessions pages a tenant's sessions newest first by (created_at, id) keyset; this
-- index serves that order directly instead of sorting every session of the tenant per page.
CREATE INDEX IF NOT EXISTS sessions_listing ON sessions (tenant_id, created_at DESC, id DESC);
