-- 0041: the write firewall's per-tenant policy lives in tenants.settings (S7 "What never gets in");
-- the application role may change that column (and, as before, hot_memories) but no other.
-- dialect: postgres
GRANT UPDATE (settings) ON tenants TO contextos_app;
-- dialect: end
-- CockroachDB has no column privileges: 0004 granted UPDATE on the whole table there.
