"""Derived formulas built on first use instead of at import.

Solving, simplifying or taking a limit of a SymPy expression, and lambdifying one (SymPy prints it
as Python source and compiles that), each cost a good part of a second. Done at import, a chapter
module's dozens of them made every fresh interpreter (a test's subprocess, a notebook kernel,
``python -m chalk``) pay seconds before its first line ran, for formulas it mostly never used.

A module registers one builder per derived name and hands its lookups to the registry through its
module ``__getattr__`` and ``__dir__`` (PEP 562), so ``moe.comm_to_compute`` still reads as a
module attribute. A builder runs once, the first time the value is read, and its result is kept:
code inside the module calls the builder itself (``_comm_to_compute()``), which returns the same
cached object. Plain symbols and cheap expression arithmetic stay eager: only what costs is lazy.

Use::

    _derived = Lazy(__name__)

    @_derived
    def _comm_to_compute():
        \"\"\"All-to-all time over expert matmul time ...\"\"\"
        return sp.simplify(t_alltoall_up / t_expert_compute)

    __getattr__, __dir__ = _derived.module_getattr, _derived.module_dir

A builder's name is the value's name with one more leading underscore: ``_comm_to_compute``
serves ``comm_to_compute``, ``__torus_share`` the module-private ``_torus_share``. (A
double-underscore builder cannot be called from inside a class body, where Python mangles the name;
call it from a module-level function.)
"""
import functools
import sys
from collections.abc import Callable

REGISTRIES: dict[str, "Lazy"] = {}
"""Every module's registry by module name, for the test that every lazy name resolves."""


class Lazy:
    """One module's derived values: each name's builder, run on first use and then cached."""

    def __init__(self, module: str):
        self.module = module
        self.builders: dict[str, Callable] = {}
        self.built: list[str] = []
        """Names whose builder has run, in order: importing a module must leave this empty."""
        REGISTRIES[module] = self

    def __call__(self, builder: Callable) -> Callable:
        """Register ``builder`` (a function of no arguments) for the name it serves; return the
        cached builder, which the module's own code calls."""
        if not builder.__name__.startswith("_"):
            raise ValueError(f"a builder's name is its value's name with a leading underscore, "
                             f"got {builder.__name__!r}")
        name = builder.__name__[1:]

        @functools.cache
        @functools.wraps(builder)
        def cached():
            self.built.append(name)
            return builder()

        self.builders[name] = cached
        return cached

    def module_getattr(self, name: str):
        """The module's ``__getattr__``: Python calls it only for names the module does not hold."""
        try:
            builder = self.builders[name]
        except KeyError:
            raise AttributeError(f"module {self.module!r} has no attribute {name!r}") from None
        return builder()

    def module_dir(self) -> list[str]:
        """The module's ``__dir__``: its own names and the lazy ones, so completion finds both."""
        return sorted(set(vars(sys.modules[self.module])) | set(self.builders))
