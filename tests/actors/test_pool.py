"""The pool's counting (brain/actors/registry/pool.py), without actors: which actor is handed out,
which
is taken back, which retires."""

from __future__ import annotations

from brain.actors.registry.pool import SessionActorPool
from brain.actors.session.kept_journal import KEPT_SESSIONS


def test_the_warmest_actor_is_handed_out_and_counted() -> None:
    pool = SessionActorPool(size=2, recycle_after=0)
    pool.adopt("a")
    pool.adopt("b")
    assert pool.short == 0
    actor = pool.take()
    assert (actor.address, actor.served, pool.short) == ("b", 1, 1)
    assert pool.returned(actor)
    assert pool.take() is actor and actor.served == 2


def test_an_actor_retires_after_its_sessions_or_when_twice_the_pool_is_idle() -> None:
    pool = SessionActorPool(size=1, recycle_after=2)
    pool.adopt("a")
    actor = pool.take()
    assert pool.returned(actor)  # one session served
    actor = pool.take()
    assert not pool.returned(actor)  # two: retired
    assert pool.take() is None and pool.short == 1
    for name in ("b", "c"):
        pool.adopt(name)
    late = pool.take()
    pool.adopt("d")
    pool.adopt("e")  # idle: b, d, e: more than twice the size
    assert not pool.returned(late)


def test_a_lost_actor_leaves_the_pool() -> None:
    pool = SessionActorPool(size=2, recycle_after=0)
    pool.adopt("a")
    pool.adopt("b")
    pool.lost("a")
    assert [actor.address for actor in pool.idle] == ["b"] and pool.short == 1


def test_returned_actors_are_kept_up_to_keep_when_that_is_more() -> None:
    pool = SessionActorPool(size=1, recycle_after=0, keep=4)
    for name in "abcd":
        pool.adopt(name)
    busy = [pool.take() for _ in range(4)]
    assert all(pool.returned(actor) for actor in busy), "four fit in keep=4"
    pool.adopt("e")
    late = pool.take()
    pool.adopt("f")
    assert not pool.returned(late), "a fifth idle one is one too many"


def test_without_a_pool_no_returned_actor_is_kept_whatever_keep_says() -> None:
    pool = SessionActorPool(size=0, recycle_after=0, keep=8)
    pool.adopt("a")
    assert not pool.returned(pool.take())


def test_a_session_goes_back_to_the_idle_actor_that_let_it_go_last() -> None:
    pool = SessionActorPool(size=3, recycle_after=0)
    for name in "abc":
        pool.adopt(name)
    first, second = pool.take("s1"), pool.take("s2")  # c, then b
    assert pool.returned(first, "s1") and pool.returned(second, "s2")
    assert pool.kept_by_idle("s1") and pool.kept_by_idle("s2") and not pool.kept_by_idle("s3")
    assert pool.take("s1") is first, "not the warmest (b), but the one that keeps s1"
    assert not pool.kept_by_idle("s1"), "its keeper is busy now"
    assert pool.take("s9").address == "b", "a session nobody keeps gets the warmest"
    assert pool.returned(first, "s2")  # s2, served by c after b: c keeps the newer state
    assert pool.take("s2") is first


def test_an_actor_keeps_as_many_sessions_as_its_journal_cache_and_forgets_them_on_exit() -> None:
    pool = SessionActorPool(size=1, recycle_after=0)
    pool.adopt("a")
    actor = pool.take()
    for n in range(KEPT_SESSIONS):
        assert pool.returned(actor, f"s{n}")
        assert pool.take(f"s{n}") is actor
    assert pool.returned(actor, "last")
    assert not pool.kept_by_idle("s0"), "the oldest went, as in the actor's own cache"
    assert pool.kept_by_idle("s1") and pool.kept_by_idle("last")
    pool.lost("a")
    assert not pool.kept_by_idle("last") and pool.take("last") is None


def test_a_retired_actor_keeps_nothing() -> None:
    pool = SessionActorPool(size=1, recycle_after=1)
    pool.adopt("a")
    assert not pool.returned(pool.take(), "s")
    pool.adopt("b")
    assert not pool.kept_by_idle("s")
