-- 0021: the contradiction gate's neighbour probe by subject (S7). A large tenant's candidates are
-- compared with the active memories that share a word of their normalized key (the label's
-- subject words), found for a whole document in one statement through this index, instead of one
-- ANN probe per concept.
CREATE INDEX IF NOT EXISTS memories_key_terms
    ON memories USING gin ((string_to_array(norm_key, ' '))) WHERE state = 'active';
