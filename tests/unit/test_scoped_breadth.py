"""A large scope's widened ANN breadth (pgvector 0.6 filters after the index scan): enough of the
scope's rows among the index's candidates for a few times k, never below the unscoped search's
ef_search, never above the bound where the exact pass is cheaper."""

from contextos.store.scoped_reads import MAX_BREADTH, SCOPE_CANDIDATES, ann_breadth


def test_half_the_tenant_searches_as_wide_as_an_unscoped_search():
    assert ann_breadth(100, 20, 0.9) == 100
    assert ann_breadth(100, 20, 0.5) == 160


def test_a_tenth_of_the_tenant_widens_to_hold_a_few_times_k_of_its_rows():
    breadth = ann_breadth(100, 20, 0.1)
    assert breadth == 800 and breadth * 0.1 == SCOPE_CANDIDATES * 20


def test_a_rare_scope_is_bounded():
    assert ann_breadth(100, 20, 0.001) == MAX_BREADTH
    assert ann_breadth(100, 20, 0.0) == MAX_BREADTH  # no share seen yet: the floor, not a division by zero


def test_k_above_ef_search_still_gets_a_few_times_k_candidates():
    assert ann_breadth(10, 50, 1.0) == SCOPE_CANDIDATES * 50
