"""Jinja expressions compiled and evaluated (the checks, derived slots and answers of a
spec): the one-line template Jinja's ``compile_expression`` would make, its code kept
between runs and its root made a function that returns the value, a name-and-steps
expression read without Jinja's machinery, and results kept by the values they read."""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from types import CodeType
from typing import TYPE_CHECKING, Any

import jinja2
from jinja2 import nodes
from jinja2.exceptions import TemplateSyntaxError
from jinja2.parser import Parser

from ..core.canonical import copy_data
from ..core.errors import SpecError
from ..core.limits import BudgetExceeded
from .jinja_context import _Context, _expression_context
from .jinja_errors import _compile_budget_message, _describe_jinja_error
from .jinja_walks import refuse_walked
from .memo import InputMemo, is_plain

if TYPE_CHECKING:
    from .jinja_sandbox import _StrictSandbox
    from .render import TemplateOrigin


def _plain_copy(value: Any) -> Any:
    """A copy of plain data, or None for anything else (which a memo does not keep)."""
    return copy_data(value) if is_plain(value) else None


#: The lines of Jinja's code of an expression's template (``{% set result = … %}``) that make
#: its root a generator, and that store the result in the context, where a function returns it.
_GENERATOR_LINE = "    if 0: yield None\n"
_STORE_RESULT = ("    context.vars['result'] = l_0_result\n"
                 "    context.exported_vars.add('result')\n")


def _returning_root(source: str) -> str | None:
    """Jinja's code of an expression's template with its root made a function that returns
    the result, where Jinja's is a generator that yields nothing and stores the result in its
    context (an expression is evaluated for every instance: no generator, no store, no read
    back); None where the code is not as this expects."""
    if source.count(_GENERATOR_LINE) != 1 or source.count(_STORE_RESULT) != 1:
        return None
    return source.replace(_GENERATOR_LINE, "").replace(_STORE_RESULT, "    return l_0_result\n")


def _result_function(root: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """What gives an expression's value from its context: its root as ``_returning_root``
    made it, else a function running Jinja's generator and reading the result it stored."""
    if not inspect.isgeneratorfunction(root):
        return root

    def result(context: Any) -> Any:
        for _ in root(context):
            pass
        return context.vars["result"]

    return result


class ExpressionCompiler:
    """The expressions of a ``Renderer``: compiled once per source, evaluated over a
    context, their errors located at the spec that wrote them."""

    env: _StrictSandbox
    _expressions: dict[tuple[str, TemplateOrigin], Callable[..., Any]]
    _compiled_expressions: dict[str, jinja2.Template]
    _expression_memos: dict[str, InputMemo]

    #: Jinja's template of compiled code, over the renderer's globals (``Renderer._template``).
    _template: Callable[[CodeType], jinja2.Template]

    def _compiled_expression(self, source: str, origin: TemplateOrigin) -> jinja2.Template:
        """Jinja's compiled form of an expression, shared by every place that writes the same
        source (where it is written matters only to error messages, added by the caller): the
        one-line template that ``compile_expression`` makes, which stores it in ``result``."""
        if source not in self._compiled_expressions:
            try:
                code = self.env.cached_compile(("expression", source),
                                               lambda: self._expression_code(source))
            except TemplateSyntaxError as exc:
                raise origin.error(f"expression syntax error: {exc.message}", 1) from None
            except RecursionError:
                raise origin.error("expression is nested too deeply to compile", 1) from None
            except (BudgetExceeded, MemoryError) as exc:
                raise origin.error(_compile_budget_message("expression", exc), 1) from None
            self._compiled_expressions[source] = self._template(code)
        return self._compiled_expressions[source]

    def _expression_tree(self, source: str) -> nodes.Template:
        # What Jinja's compile_expression compiles: a template assigning the expression to
        # ``result``. Built here, not by it, so that its code can be kept between runs.
        parser = Parser(self.env, source, state="variable")
        expression = parser.parse_expression()
        if not parser.stream.eos:
            raise TemplateSyntaxError("chunk after expression", parser.stream.current.lineno,
                                      None, None)
        body = [nodes.Assign(nodes.Name("result", "store"), expression, lineno=1)]
        return nodes.Template(body, lineno=1).set_environment(self.env)

    def _expression_code(self, source: str) -> CodeType:
        return self.env.compile_expression_tree(self._expression_tree(source))

    def _expression_memo(self, source: str) -> InputMemo:
        """Results of the expression ``source``, wherever it is written, by its inputs."""
        if source not in self._expression_memos:
            def names() -> tuple[str, ...] | None:
                found = self.env.free_names("expression", source,
                                            lambda: self._expression_tree(source))
                # An instance is new every time: a key made of it costs more than the check.
                return None if found is None or "instance" in found else found

            self._expression_memos[source] = InputMemo(names)
        return self._expression_memos[source]

    def expression(self, source: str, origin: TemplateOrigin) -> Callable[[Mapping[str, Any]], Any]:
        """A compiled Jinja expression; calling it evaluates it over a context."""
        key = (source, origin)  # its errors name its own place and label
        if key not in self._expressions:
            template = self._compiled_expression(source, origin)
            memo = self._expression_memo(source)
            path = self._path(source)

            def evaluate(context: Mapping[str, Any]) -> Any:
                # Plain results are kept by the values the expression reads (InputMemo), and
                # handed out as copies: whoever is given one may change it.
                if memo.active:
                    return memo.result(context, run, _plain_copy)
                return run(context)

            def read(context: Mapping[str, Any]) -> Any:
                # An expression that is a name and the attributes and items read off it
                # (``settings[2].key``) is read as Jinja's code would read it: the name from
                # the context, each step by the sandbox's getattr or getitem. Anything that
                # is not plainly there (a name the context lacks, which may be a global, an
                # undefined step, a refusal) is Jinja's to answer, with its own error.
                name, steps = path  # type: ignore[misc]
                try:
                    value = context[name]
                    for is_attribute, key in steps:
                        value = (self.env.getattr if is_attribute else self.env.getitem)(
                            value, key)
                    if not isinstance(value, jinja2.Undefined):
                        return value
                except (SpecError, BudgetExceeded):
                    raise
                except Exception:  # noqa: S110 (Jinja's own evaluation says what went wrong)
                    pass
                return run(context)

            eval_ctx = jinja2.runtime.EvalContext(self.env, template.name)
            root = template.root_render_func  # type: ignore[attr-defined]
            result_of = _result_function(root)
            # A root that returns its value leaves its context as it found it, so it may run
            # in one it shares with others (``expression_scope``); Jinja's own stores the
            # value in it.
            shares = result_of is root

            def run(context: Mapping[str, Any], _t: jinja2.Template = template) -> Any:
                # What calling Jinja's compiled expression does, less its copies of the context
                # (its keyword arguments, a dict of them, then merged with the globals): checks
                # and slots run it for every instance, over a RenderScope they share.
                if type(context) is _Context:
                    local = context if shares else _expression_context(
                        _t, {**context.parent, **context.vars}, eval_ctx)
                else:
                    local = _expression_context(_t, context, eval_ctx)
                try:
                    value = result_of(local)
                    if isinstance(value, jinja2.Undefined):
                        value._fail_with_undefined_error()
                    # The value is written out (canonical JSON, in C) and compared: sized.
                    refuse_walked(value, "the value")
                    return value
                except SpecError:
                    raise
                except BudgetExceeded as exc:
                    if exc.where is None:  # time ran out in this expression: point at it
                        place = origin.error("", 1).problems[0]
                        exc.where = (place.file or "", place.line or 1, place.column or 1)
                    raise
                except Exception as exc:
                    message, _ = _describe_jinja_error(exc)
                    raise origin.error(f"{message} in expression {source!r}", 1) from None

            self._expressions[key] = evaluate if path is None else read
        return self._expressions[key]

    def _path(self, source: str) -> tuple[str, tuple[tuple[bool, Any], ...]] | None:
        """An expression that is a name with attributes and constant items read off it
        (``rule_phrases``, ``settings[2].key``) as the name and its steps (is it an
        attribute, and which), or None for any other."""
        node = self._expression_tree(source).body[0].node  # type: ignore[attr-defined]
        steps: list[tuple[bool, Any]] = []
        while True:
            if isinstance(node, nodes.Getattr):
                steps.append((True, node.attr))
            elif isinstance(node, nodes.Getitem) and isinstance(node.arg, nodes.Const) and \
                    type(node.arg.value) in (int, str):
                steps.append((False, node.arg.value))
            else:
                break
            node = node.node
        if not isinstance(node, nodes.Name) or node.ctx != "load":
            return None
        return node.name, tuple(reversed(steps))
