"""The sandboxed Jinja environment every template and expression runs in: Jinja's immutable
sandbox with unsafe attributes refused outright, arithmetic and string methods checked
for size, control characters refused, compiled code and tree analyses kept between runs
under the fingerprint of everything that decides them."""

from __future__ import annotations

import functools
import sys
from collections.abc import Callable
from types import CodeType
from typing import Any, TypeVar

import jinja2
from jinja2 import nodes
from jinja2.exceptions import SecurityError, TemplateSyntaxError
from jinja2.sandbox import ImmutableSandboxedEnvironment

from ..core.code_cache import cached_code, cached_data, code_versions, fingerprint
from ..core.limits import one_group
from ..spec.project import LIBRARY_PREFIX
from .jinja_codegen import _DICT_ATTRIBUTES, _FoldCheckedArithmetic, _InlineReads, _NameTracker
from .jinja_context import _Context
from .jinja_errors import numbered_traceback
from .jinja_expressions import _returning_root
from .jinja_messages import _REACHES_OTHERS, _prints_directly
from .jinja_output import (
    _CONTROL_CHARACTER,
    _MAKES_CHARACTERS,
    MAX_RENDER_CHARS,
    _article,
    _too_large,
    refuse_control_characters,
)
from .jinja_sized_filters import (
    check_method_call,
    format_width,
    formatted_size,
    refuse_long_number,
    refuse_over,
    text_length,
)
from .jinja_walks import refuse_walked_call, walked_operand

#: What an analysis of a template's tree gives (``_StrictSandbox._kept_analysis``).
T = TypeVar("T")


class _StrictSandbox(ImmutableSandboxedEnvironment):
    """The immutable sandbox, but an unsafe attribute raises at once instead of being undefined,
    and arithmetic that would build a huge number or string is refused before it runs."""

    intercepted_binops = frozenset({"**", "*", "%"})
    context_class = _Context
    code_generator_class = _InlineReads
    #: The tests that are plain functions, by name (made at the first test called by name).
    _plain_tests: dict[str, Callable[..., Any]] | None = None
    _compile_fingerprint: str | None = None
    #: The line of the constant expression being folded by the compile under way, if any:
    #: where a compile that runs out of budget points.
    folding_line: int | None = None

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        #: Display names of the templates fetched by name while rendering (include, import,
        #: extends), until ``Renderer.take_fetched`` hands them out. Jinja reads a file once
        #: and then serves it from its cache, so its loader cannot say which renders used it.
        self.fetched: set[str] = set()
        # Compiled templates call environment.getattr and .getitem for every ``a.b`` and
        # ``a[b]``: bound once here, each call finds the method without binding it anew.
        self.getattr = self.getattr  # type: ignore[method-assign]
        self.getitem = self.getitem  # type: ignore[method-assign]

    def handle_exception(self, source: str | None = None) -> Any:
        """Jinja's: the exception being handled raised again at its templates' lines, every
        entry of its traceback given a line first (``numbered_traceback``)."""
        exc = sys.exc_info()[1]
        if exc is not None:
            exc.__traceback__ = numbered_traceback(exc.__traceback__)
        return super().handle_exception(source)

    def join_path(self, template: str, parent: str) -> str:
        """A template of memspec's library that includes, imports or extends another by name
        means one of the library too, never a project's file of that name."""
        if parent.startswith(LIBRARY_PREFIX) and not template.startswith(LIBRARY_PREFIX):
            return LIBRARY_PREFIX + template
        return template

    def get_template(self, name: Any, parent: str | None = None,
                     globals: Any = None) -> jinja2.Template:
        template = super().get_template(name, parent, globals)
        self.fetched.add(template.filename or template.name or str(name))
        return template

    def select_template(self, names: Any, parent: str | None = None,
                        globals: Any = None) -> jinja2.Template:
        template = super().select_template(names, parent, globals)
        self.fetched.add(template.filename or template.name or "")
        return template

    @staticmethod
    def concat_sized(parts: tuple[Any, ...]) -> str:
        """The text of ``~``: each part's text joined, a list, tuple or dict's sized first."""
        for part in parts:
            if type(part) is not str and isinstance(part, (list, tuple, dict)):
                refuse_over(text_length(part), "'~'")
        return "".join(map(str, parts))

    def call_binop(self, context: Any, operator: str, left: Any, right: Any) -> Any:
        if operator == "**" and isinstance(right, int) and abs(right) > 256 and \
                left not in (0, 1, -1):
            raise SecurityError(f"exponent {right} is too large for a template")
        if type(left) is int and type(right) is int and operator != "%":
            # Multiplying numbers of a million digits is one step of C that takes seconds.
            refuse_long_number(operator, left, right)
        # What ``*`` repeats, and what ``%`` formats, are sized as any walked value: a list
        # repeated level by level (``[[[x]*2]*2]*2``) is refused once it passes the limit.
        walked_operand(left, f"'{operator}'")
        walked_operand(right, f"'{operator}'")
        if operator == "*":
            for seq, count in ((left, right), (right, left)):
                if isinstance(seq, (str, list, tuple)) and isinstance(count, int) and \
                        _too_large(len(seq) * count):
                    raise SecurityError("repetition would build a value over "
                                        f"{MAX_RENDER_CHARS} items")
        if operator == "%" and isinstance(left, str):
            values = right if isinstance(right, tuple) else (right,)
            width = format_width(left, values, braces=False)
            if _too_large(width):
                raise SecurityError(f"format width {width} is too large")
            refuse_over(formatted_size(left, list(values), braces=False), "'%' formatting")
            return refuse_control_characters(
                super().call_binop(context, operator, left, right), "'%' formatting")
        return super().call_binop(context, operator, left, right)

    def wrap_str_format(self, value: Any) -> Callable[..., str] | None:
        # ``"{:>{}}".format(x, 10**9)``: the sandbox's str.format, its widths checked first.
        wrapper = super().wrap_str_format(value)
        if wrapper is None:
            return None

        def sized(*args: Any, **kwargs: Any) -> str:
            check_method_call(value, args, kwargs)
            return wrapper(*args, **kwargs)

        return functools.update_wrapper(sized, value)

    def call(__self, __context: Any, __obj: Any, *args: Any, **kwargs: Any) -> Any:  # noqa: N805
        # A str method that pads or repeats (``center``, ``replace``, ``join`` …) runs in C,
        # beyond the alarm: its size is checked before it runs (``sized``).
        check_method_call(__obj, args, kwargs)
        # Whatever else a call is handed (``loop.changed(x)``, ``big.count(x)``, ``dict()``)
        # may be walked in C: sized by its logical size first.
        refuse_walked_call(__obj, args, kwargs)
        result = super().call(__context, __obj, *args, **kwargs)
        # Only what makes characters from numbers needs looking at: every other text comes
        # from checked pools, slots and template literals.
        if type(result) is str and getattr(__obj, "__name__", None) in _MAKES_CHARACTERS:
            refuse_control_characters(result, f"{__obj.__name__}()")
        return result

    #: A comparison's operand or a dict key, sized before C walks it (``jinja_walks``).
    walked_operand = staticmethod(walked_operand)

    def plain_test(self, name: Any) -> Callable[..., Any] | None:
        """The test called ``name`` where it is a plain function (it takes no context,
        environment or evaluation context, so it can be called as it is), else None."""
        tests = self._plain_tests
        if tests is None:
            tests = self._plain_tests = {
                test_name: test for test_name, test in self.tests.items()
                if jinja2.utils._PassArg.from_obj(test) is None}
        return tests.get(name) if type(name) is str else None

    def call_test(self, name: Any, value: Any, args: Any = None, kwargs: Any = None,
                  context: Any = None, eval_ctx: Any = None) -> Any:
        # Filters call a test by name for every item (select, reject …); a plain one is
        # called as it is, without Jinja's look-up of what to pass it.
        test = self.plain_test(name)
        if test is None:
            return super().call_test(name, value, args, kwargs, context, eval_ctx)
        return test(value, *(args or ()), **(kwargs or {}))

    def getitem(self, obj: Any, argument: Any) -> Any:
        # ``d[key]`` hashes the key in C (a tuple's items all through): sized first, as a
        # dict literal's key is. A text, number or slice is not walked.
        if type(argument) is not str and type(argument) is not int:
            walked_operand(argument, "a subscript")
        return super().getitem(obj, argument)

    def getattr(self, obj: Any, attribute: str) -> Any:
        # ``item.key`` on a plain dict (a pool item, a slot value, an instance) is most of what
        # templates and checks read. Jinja tries the attribute first and reaches the key through
        # a raised AttributeError, which costs more than the read; for a name that is not one of
        # a dict's methods the attribute cannot exist, so the key is read at once, same result.
        if type(obj) is dict and attribute not in _DICT_ATTRIBUTES:
            try:
                return obj[attribute]
            except KeyError:
                return self.undefined(obj=obj, name=attribute)
        return super().getattr(obj, attribute)

    def _generate(self, source: nodes.Template, name: str | None, filename: str | None,
                  defer_init: bool = False) -> str:
        for node in source.find_all((nodes.Const, nodes.TemplateData)):
            text = node.data if isinstance(node, nodes.TemplateData) else node.value
            found = _CONTROL_CHARACTER.search(text) if type(text) is str else None
            if found is not None:
                character = found.group()
                raise TemplateSyntaxError(
                    f"the control character U+{ord(character):04X} is not allowed in template "
                    "text or string literals", node.lineno or 1, name, filename)
        # Jinja folds constant arithmetic while compiling, but not an operation the sandbox
        # intercepts: ``['user', 'assistant'] * 15`` would be built anew at every render.
        return super()._generate(_FoldCheckedArithmetic(self).visit(source), name, filename,
                                 defer_init)

    def compile(self, source: Any, name: str | None = None, filename: str | None = None,
                raw: bool = False, defer_init: bool = False) -> Any:
        # Every template and include passes here (expressions through cached_compile); its
        # code is kept between runs, where a short command spent a quarter of its time.
        # Errors are never kept.
        if raw or defer_init or not isinstance(source, str):
            with one_group():
                return super().compile(source, name, filename, raw, defer_init)
        return self.cached_compile(
            ("template", name or "", filename or "", source),
            lambda: super(_StrictSandbox, self).compile(source, name, filename))

    def compile_expression_tree(self, tree: nodes.Template) -> CodeType:
        """The code of an expression's template (``Renderer._expression_tree``), its root a
        function that returns the expression's value (``_returning_root``) where Jinja's code
        allows."""
        source = self._generate(tree, None, None)
        return self._compile(_returning_root(source) or source, "<template>")

    def cached_compile(self, parts: tuple[str, ...], build: Callable[[], CodeType]) -> CodeType:
        """The code ``build`` compiles, kept between runs under ``parts`` (which, with this
        environment's configuration, must decide the code). Compiling runs under the budget
        of a group: Jinja folds constant expressions as it compiles, calling filters on
        literals, which is a render by another name."""

        def budgeted() -> CodeType:
            with one_group():
                return build()

        return cached_code("jinja", (self.compile_fingerprint(), *parts), budgeted)

    def compile_fingerprint(self) -> str:
        """``_compile_fingerprint`` of this environment, worked out once."""
        if self._compile_fingerprint is None:
            self._compile_fingerprint = _compile_fingerprint(self)
        return self._compile_fingerprint

    def free_names(self, kind: str, source: str, parse: Callable[[], nodes.Template]
                   ) -> tuple[str, ...] | None:
        """The names a template or expression (``parse`` gives its tree) reads from its
        context, kept between runs as compiled code is; None where it reaches other templates
        (include, import, extends), whose names are not its own, or cannot be analysed."""

        def analyse() -> list[str] | None:
            tree = parse()
            if next(tree.find_all(_REACHES_OTHERS), None) is not None:
                return None
            tracker = _NameTracker(self)
            tracker.visit(tree)
            return sorted(tracker.undeclared_identifiers)

        # Nothing worked out: nothing kept by the memo, and the render says why.
        names = self._kept_analysis("jinja-names", (kind, source), analyse, None)
        return None if names is None else tuple(names)

    def _kept_analysis(self, kind: str, parts: tuple[str, ...], analyse: Callable[[], T],
                       failed: T) -> T:
        """What ``analyse`` works out of a template's tree, kept between runs (under this
        environment's compile fingerprint and ``parts``) as its compiled code is; ``failed``
        where it raises."""

        def build() -> T:
            try:
                return analyse()
            except Exception:
                return failed

        return cached_data(kind, (self.compile_fingerprint(), *parts), build)

    def blocks_print_directly(self, source: str, parse: Callable[[], nodes.Template]) -> bool:
        """Whether every ``{% message %}`` block of a template (``parse`` gives its tree)
        prints straight into its output (``_prints_directly``), kept between runs as its
        compiled code is."""

        # Not worked out: the render, by the markers, says what is wrong.
        return self._kept_analysis("jinja-direct-blocks", (source,),
                                   lambda: _prints_directly(parse()), False)

    def unsafe_undefined(self, obj: Any, attribute: str) -> Any:
        if isinstance(obj, jinja2.Undefined):
            # `cycler.__init__` when there is no cycler: say that, not "of a StrictUndefined".
            obj._fail_with_undefined_error()
        kind = type(obj).__name__
        raise SecurityError(
            f"access to attribute {attribute!r} of {_article(kind)} {kind} is not allowed "
            "in memspec templates"
        )

    def is_safe_attribute(self, obj: Any, attr: str, value: Any) -> bool:
        # Besides the sandbox's own rules, refuse dunder-ish and generator/frame internals.
        if attr.startswith("_") or attr in {"mro", "gi_frame", "gi_code", "f_globals"}:
            return False
        return super().is_safe_attribute(obj, attr, value)


def _compile_fingerprint(env: jinja2.Environment) -> str:
    """Everything besides a template's own text that decides the code Jinja compiles it to:
    the options and extensions, the names of filters, tests and globals (a missing one fails
    the compile), and the code of every package that runs while compiling (constant parts of
    a template are evaluated then, with these filters): Jinja and MarkupSafe by version, the
    packages of the environment, its extensions, filters, tests and globals, and this
    package's own source."""
    modules = ["jinja2", "markupsafe", *(cls.__module__ for cls in type(env).__mro__)]
    modules += [type(e).__module__ for e in env.extensions.values()]
    modules += [getattr(f, "__module__", None) or type(f).__module__
                for f in (*env.filters.values(), *env.tests.values(), *env.globals.values())]
    options = (env.block_start_string, env.block_end_string, env.variable_start_string,
               env.variable_end_string, env.comment_start_string, env.comment_end_string,
               env.line_statement_prefix, env.line_comment_prefix, env.trim_blocks,
               env.lstrip_blocks, env.newline_sequence, env.keep_trailing_newline,
               env.optimized, env.is_async, bool(env.autoescape), env.finalize is not None,
               env.undefined.__name__)
    return fingerprint([repr(options), *sorted(env.extensions), *sorted(env.filters), "\0",
                        *sorted(env.tests), "\0", *sorted(env.globals), "\0",
                        *code_versions(modules)])
