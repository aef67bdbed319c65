// The API's own shapes, generated from docs/openapi.json at build time (npm run build runs
// openapi-typescript first), so a renamed or removed field fails the console's type check.
import type { components } from "./openapi";

type Schemas = components["schemas"];
export type Band = Schemas["Band"];
export type MemoryType = Schemas["MemoryType"];
export type GraphNode = Schemas["GraphNode"];
export type GraphEdge = Schemas["GraphEdge"];
export type MemoryGraph = Schemas["MemoryGraph"];
export type GraphColumns = Schemas["GraphColumns"];
export type MemoryDetail = Schemas["MemoryDetail"];
export type MemoryListItem = Schemas["MemoryListItem"];
export type MemoryPage = Schemas["MemoryPage"];
export type MemoryHistory = Schemas["MemoryHistory"];
export type AuditPage = Schemas["AuditPage"];
export type Forecast = Schemas["Forecast"];
export type ForecastSeries = Schemas["ForecastSeries"];
export type StrengthCurve = Schemas["StrengthCurve"];
export type HealthReport = Schemas["HealthReport"];
export type GovernanceReport = Schemas["GovernanceReport"];
export type ReviewPage = Schemas["ReviewPage"];
export type ReviewItem = Schemas["ReviewItem"];
export type DocumentPage = Schemas["DocumentPage"];
export type DocumentRecord = Schemas["DocumentRecord"];
export type DocumentMemories = Schemas["DocumentMemories"];
export type SessionView = Schemas["SessionView"];
export type SessionPage = Schemas["SessionPage"];

// Every band the API can send, each with its own colour: a new band fails this record's type.
export const BAND_COLOURS: Record<Band, string> = {
  strong: "#1d4ed8",
  fading: "#b45309",
  critical: "#dc2626",
  forgotten: "#6b7280",
};
export const BANDS = Object.keys(BAND_COLOURS) as Band[];
