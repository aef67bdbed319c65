"""A large scope's widened ANN breadth (pgvector 0.6 filters after the index scan): enough of the
scope's rows among the index's candidates for SCOPE_CANDIDATES times k, never below the unscoped search's
ef_search, never above the bound where the exact pass is cheaper."""

from contextos.store.scoped_reads import MAX_BREADTH, SCOPE_CANDIDATES, ann_breadth


def test_the_breadth_holds_enough_of_the_scopes_rows_for_its_share():
    assert ann_breadth(100, 20, 0.9) == 556  # ceil(25 · 20 / 0.9)
    breadth = ann_breadth(100, 20, 0.5)
    assert breadth == 1000 and breadth * 0.5 == SCOPE_CANDIDATES * 20


def test_a_scope_almost_the_whole_tenant_searches_as_wide_as_an_unscoped_search():
    assert ann_breadth(600, 20, 1.0) == 600


def test_a_rare_scope_is_bounded():
    assert ann_breadth(100, 20, 0.001) == MAX_BREADTH
    assert ann_breadth(100, 20, 0.0) == MAX_BREADTH  # no share seen yet: the floor, not a division by zero


def test_k_above_ef_search_still_gets_its_candidates():
    assert ann_breadth(10, 30, 1.0) == SCOPE_CANDIDATES * 30
