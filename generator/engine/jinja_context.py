"""Jinja's runtime context of a render or an expression, made with fewer copies than Jinja
makes it: a RenderScope shared by the renders of one instance, and the bare context a
template without blocks runs in."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jinja2

from .jinja_output import Message


class RenderScope(dict):
    """The names a template or expression sees, Jinja's globals among them, in one dict that
    renders read as it is.

    Jinja copies a plain context twice a render (``dict()`` of it, then merged with the
    globals); an instance renders and checks a dozen times from one context, so it is made into
    a scope once (``Renderer.scope``) and shared. Templates cannot change it: the sandbox is
    immutable, and Jinja keeps a template's own names (``set``, loop variables, an expression's
    result) in a layer of their own."""

    __slots__ = ()


def jinja_context(template: jinja2.Template, context: Mapping[str, Any]) -> Any:
    """The Jinja context ``template`` runs in over ``context``: a RenderScope read as it is,
    anything else merged with the globals (one copy, where ``Template.render`` makes two)."""
    env = template.environment
    scope = context if type(context) is RenderScope else {**template.globals, **context}
    return env.context_class(env, scope, template.name, template.blocks)


class _Context(jinja2.runtime.Context):
    """Jinja's context of one render, which may collect the message blocks it renders."""

    #: Where the message blocks of a collecting render put their messages, else None.
    message_blocks: list[Message] | None = None

    def __init__(self, environment: Any, parent: dict[str, Any], name: str | None,
                 blocks: dict[str, Any], globals: Any = None) -> None:
        if blocks or globals is not None:
            super().__init__(environment, parent, name, blocks, globals)
            return
        # What Jinja's __init__ does for a template without blocks, less its comprehension
        # over them (a frame of its own): every render and expression makes a context.
        self._fill(environment, parent, name, jinja2.runtime.EvalContext(environment, name))

    @classmethod
    def bare(cls, environment: Any, parent: dict[str, Any], name: str | None,
             eval_ctx: Any) -> _Context:
        """A context of a template without blocks, made without Jinja's __init__."""
        local = cls.__new__(cls)
        local._fill(environment, parent, name, eval_ctx)
        return local

    def _fill(self, environment: Any, parent: dict[str, Any], name: str | None,
              eval_ctx: Any) -> None:
        self.parent = parent
        self.vars = {}
        self.environment = environment
        self.eval_ctx = eval_ctx
        self.exported_vars = set()
        self.name = name
        self.globals_keys = set()
        self.blocks = {}


def expression_scope(environment: Any, values: RenderScope, **names: Any) -> _Context:
    """What several expressions evaluated over the same values share (the checks of one
    instance): ``values`` with ``names`` above them, as the context a compiled expression
    runs in, made once rather than a copy of the values and a context for each expression."""
    local = _Context.bare(environment, values, None, jinja2.runtime.EvalContext(environment, None))
    local.vars.update(names)
    return local


def _expression_context(template: jinja2.Template, context: Mapping[str, Any],
                        eval_ctx: Any) -> _Context:
    """``jinja_context`` for a compiled expression, with the evaluation context its
    evaluations share: an expression holds no statement that could change it (an
    ``{% autoescape %}`` block), and it is made for every one of them."""
    return _Context.bare(template.environment,
                         context if type(context) is RenderScope else
                         {**template.globals, **context}, template.name, eval_ctx)
