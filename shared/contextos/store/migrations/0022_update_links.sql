-- 0022: what the contradiction gate learned without deciding (S5, S6, S7). When a newer statement
-- reports a change to the same subject ("moved to Porto", "was rewritten in Kotlin") but the judge
-- does not call it a contradiction, nothing is superseded (a false supersession is silent data
-- loss): both stay active, a `contradicts` edge flags the pair for the governance report, and the
-- older memory points at the newer one here, so the read path ranks the update first. The pointer
-- lives on the memory row because a cold stub keeps its row (and loses its edges). Same SQL for
-- both dialects.
ALTER TABLE memories ADD COLUMN IF NOT EXISTS updated_by uuid;
