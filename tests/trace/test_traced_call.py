"""The ``@perflab.trace`` wrapper of a sync function (``_core.Traced``, called by
vectorcall): it passes every kind of argument on unchanged, binds like a function
(methods, classmethods, staticmethods, properties, a method called with
``getattr``), keeps the function's metadata, and is freed with the function."""

from __future__ import annotations

import asyncio
import copy
import gc
import inspect
import pickle
import weakref

import pytest

import perflab
import perflab.trace
from perflab import _core


@perflab.trace("c.pickled")
def pickled(x):
    """A module-level traced function: what pickle can find by name."""
    return x * 2


class Pickled:
    """A module-level class with a traced method."""

    @perflab.trace("c.pickled_method")
    def method(self):
        return 3


def counts() -> dict[str, int]:
    return {name: s["count"] for name, s in perflab.trace.snapshot().items()}


def test_every_kind_of_argument_is_passed_on_unchanged():
    @perflab.trace("c.args")
    def f(a, /, b, *rest, c, d=4, **kw):
        return a, b, rest, c, d, kw

    assert f(1, 2, c=3) == (1, 2, (), 3, 4, {})
    assert f(1, 2, 5, 6, c=3, d=7, e=8) == (1, 2, (5, 6), 3, 7, {"e": 8})
    assert f(*[1, 2], **{"c": 3}) == (1, 2, (), 3, 4, {})  # through tp_call
    assert f.__call__(1, b=2, c=3) == (1, 2, (), 3, 4, {})
    with pytest.raises(TypeError, match="c"):
        f(1, 2)  # the function's own error, recorded as a span all the same
    assert counts()["c.args"] == 5
    assert isinstance(f, _core.Traced) and inspect.signature(f) == inspect.signature(f.__wrapped__)
    with pytest.raises(TypeError):
        type(f)(f.__wrapped__)  # made only by perflab.trace


def test_methods_classmethods_staticmethods_and_properties_bind_like_functions():
    class Shop:
        @perflab.trace("c.method")
        def method(self, n, *, k=0):
            return self, n, k

        @classmethod
        @perflab.trace("c.classmethod")
        def cls_method(cls, n):
            return cls, n

        @staticmethod
        @perflab.trace("c.staticmethod")
        def static(n):
            return n

        @property
        @perflab.trace("c.property")
        def prop(self):
            return self

        @perflab.trace("c.async")
        async def coro(self, n):
            await asyncio.sleep(0)
            return self, n

    shop = Shop()
    assert shop.method(1, k=2) == (shop, 1, 2)  # called with no bound method made
    bound = shop.method
    assert bound.__self__ is shop and bound.__func__ is Shop.method and bound(3) == (shop, 3, 0)
    assert Shop.method(shop, 4) == (shop, 4, 0)
    assert Shop.cls_method(5) == (Shop, 5) and shop.cls_method(6) == (Shop, 6)
    assert Shop.static(7) == 7 and shop.static(8) == 8
    assert shop.prop is shop
    assert asyncio.run(shop.coro(9)) == (shop, 9)
    assert counts() == {
        "c.method": 3,
        "c.classmethod": 2,
        "c.staticmethod": 2,
        "c.property": 1,
        "c.async": 1,
    }


def test_metadata_dict_weakrefs_and_repr():
    def f():
        """Doc."""

    f.extra = 1
    g = perflab.trace("c.meta")(f)
    assert (g.__name__, g.__qualname__, g.__doc__, g.__module__) == (
        f.__name__,
        f.__qualname__,
        "Doc.",
        __name__,
    )
    assert g.extra == 1 and g.__wrapped__ is f and g.span_name == "c.meta"
    g.more = 2
    assert g.__dict__["more"] == 2
    assert weakref.ref(g)() is g
    assert repr(g).startswith("<perflab.trace 'c.meta' of <function ")


def test_a_wrapper_in_a_cycle_with_its_function_is_collected():
    namespace: dict = {}
    exec("def f():\n    return f\n", namespace)  # f's globals hold its own wrapper
    namespace["f"] = perflab.trace("c.cycle")(namespace["f"])
    wrapper = namespace["f"]
    assert wrapper() is wrapper
    ref = weakref.ref(wrapper)
    del wrapper, namespace
    gc.collect()
    assert ref() is None


def test_recording_off_forwards_the_same_way():
    @perflab.trace("c.off")
    def f(a, *, b):
        return a + b

    perflab.trace.enable(False)
    try:
        assert f(1, b=2) == 3 and f(*(1,), **{"b": 3}) == 4
    finally:
        perflab.trace.enable(True)
    assert f(1, b=1) == 2
    assert counts() == {"c.off": 1}


def test_a_traced_function_pickles_and_copies_by_reference_as_a_function_does():
    """What multiprocessing and ProcessPoolExecutor do with the function they run."""
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        assert pickle.loads(pickle.dumps(pickled, protocol)) is pickled
    assert pickle.loads(pickle.dumps(Pickled.method)) is Pickled.method
    assert pickle.loads(pickle.dumps(Pickled().method))() == 3  # a bound method
    assert copy.copy(pickled) is pickled and copy.deepcopy(pickled) is pickled

    @perflab.trace("c.local")
    def local():
        pass

    with pytest.raises((pickle.PicklingError, AttributeError)):
        pickle.dumps(local)  # as with a plain local function: not found by name
    nameless = perflab.trace("c.nameless")(len)
    del nameless.__dict__["__qualname__"]
    with pytest.raises(TypeError, match="pickled by reference"):
        pickle.dumps(nameless)
