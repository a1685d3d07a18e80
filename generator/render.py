"""The one place Jinja is configured: a sandboxed, strict environment, and rendering of
templates into role-tagged messages.

Templates may come from strangers, so they run in Jinja's immutable sandbox; an unsafe
attribute is an error (not a silent blank), undefined names are errors, and nothing random or
clock-based is available. Every Jinja error becomes a SpecError naming the template file,
line and column.
"""

from __future__ import annotations

import datetime
import functools
import inspect
import operator
import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from types import CodeType, TracebackType
from typing import Any, TypeVar

import jinja2
import xxhash
from jinja2 import meta, nodes
from jinja2.compiler import CodeGenerator
from jinja2.exceptions import SecurityError, TemplateSyntaxError, UndefinedError
from jinja2.ext import Extension
from jinja2.optimizer import Optimizer
from jinja2.parser import Parser
from jinja2.sandbox import ImmutableSandboxedEnvironment
from jinja2.visitor import NodeTransformer

from .canonical import SCALARS, copy_data, has_lone_surrogate
from .code_cache import cached_code, cached_data, code_versions, fingerprint
from .errors import SpecError, lookalike_note
from .length_match import match_lengths
from .limits import BudgetExceeded, group_megabytes, group_seconds, one_group
from .memo import InputMemo, is_plain
from .project import LIBRARY_PREFIX, Project
from .sized import (
    MAX_BUILT,
    check_method_call,
    format_width,
    formatted_size,
    refuse_over,
    sized_filters,
    text_length,
)
from .yamlsafe import read_digest, read_text

#: What an analysis of a template's tree gives (``_StrictSandbox._kept_analysis``).
T = TypeVar("T")

ROLES = ("system", "user", "assistant", "tool")

#: Control characters no template, pool or slot value may hold (each is refused on loading).
_RESERVED = ("\x02", "\x03", "\x1f")
#: The other control characters (C0 but tab, newline and carriage return; DEL; C1): a pool
#: may not hold them, and neither may a template's text, its string literals ("\x1b") or what
#: it makes of numbers (``"%c"|format(27)``, ``"{:c}".format(27)``, ``"a".translate({97: 27})``),
#: as they would act on a terminal or a viewer rather than show.
_CONTROL_CHARACTER = re.compile("[\x00\x01\x04-\x08\x0b\x0c\x0e-\x1e\x7f-\x9f]")
#: The str methods and filters that make characters from numbers.
_MAKES_CHARACTERS = frozenset({"format", "format_map", "translate"})


def refuse_control_characters(text: str, what: str) -> str:
    """``text`` unless it holds a control character (``_CONTROL_CHARACTER``): a
    SecurityError naming it and ``what`` made it."""
    found = _CONTROL_CHARACTER.search(text)
    if found is not None:
        raise SecurityError(f"{what} produced the control character "
                            f"U+{ord(found.group()):04X}, which memspec text may not hold")
    return text
#: The first of them marks the fields of a rendered message: MARK role MARK name MARK line
#: MARK body MARK. Splitting a phase's text at it (in C, at memchr speed) gives [outside, role,
#: name, line, body, outside, role, …], five parts a message and the text after the last.
_MARK = _RESERVED[0]
#: A ``{name}`` left over from str.format habits, which Jinja would print literally.
SINGLE_BRACE_RE = re.compile(r"(?<!\{)\{\s*[A-Za-z_][A-Za-z0-9_.]*\s*\}(?!\})")
#: Largest ``range()`` a template may build.
MAX_RANGE = 10_000
#: Largest text a single render may produce, in characters.
MAX_RENDER_CHARS = MAX_BUILT


#: One role-tagged message of a phase, in the form an instance holds it: ``role``, ``content``
#: and, when the template names the speaker, ``name``.
Message = dict[str, str]


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


#: The filter a ``{% message %}`` block applies to its body (a name no template needs to use).
MESSAGE_FILTER = "_message_block"


class MessageExtension(Extension):
    """``{% message "user" %}...{% endmessage %}`` marks one message of a phase's output.

    The block compiles to a filter block: its body renders in a scope of its own (a ``set``
    inside does not leak out), and the filter wraps it in the markers ``split_messages`` reads.
    A filter is called directly, where a call block would build a macro and pass it through the
    sandbox's call checks: every message of every instance goes through here."""

    tags = {"message"}

    def parse(self, parser: Any) -> nodes.Node:
        lineno = next(parser.stream).lineno
        role = parser.parse_expression()
        name: nodes.Expr = nodes.Const("")
        if parser.stream.skip_if("comma"):
            name = parser.parse_expression()
        body = parser.parse_statements(("name:endmessage",), drop_needle=True)
        wrap = nodes.Filter(None, MESSAGE_FILTER, [role, name, nodes.Const(lineno)], [], None,
                            None, lineno=lineno)
        return nodes.FilterBlock(body, wrap).set_lineno(lineno)


#: What a message block prints in a render that collects its messages (``render_messages``
#: of a template whose blocks print straight to its output): the n-th block the n-th of these,
#: a string no other output can be (identity), in place of the marked text it would print.
_BLOCK_TOKENS = [f"{_MARK}{n}{_MARK}" for n in range(256)]


def _block_token(index: int) -> str:
    """The string the ``index``-th collected message block prints."""
    while index >= len(_BLOCK_TOKENS):
        _BLOCK_TOKENS.append(f"{_MARK}{len(_BLOCK_TOKENS)}{_MARK}")
    return _BLOCK_TOKENS[index]


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


@jinja2.pass_context
def _message_block(context: _Context, body: str, role: Any, name: Any, lineno: int) -> str:
    """One message's rendered body after the markers that carry its role, name and line; in
    a render that collects messages, the message is handed over and a token printed instead
    (a name that is not canonical as it is, which the markers' way makes so, excepted)."""
    collected = context.message_blocks
    if role in ROLES and not name and _MARK not in body:
        # Nearly every block: a role and a body, nothing to refuse.
        if collected is None:
            return f"{_MARK}{role}{_MARK}{_MARK}{lineno}{_MARK}{body}{_MARK}"
        collected.append({"role": role, "content": body.strip()})
        try:
            return _BLOCK_TOKENS[len(collected) - 1]
        except IndexError:
            return _block_token(len(collected) - 1)
    return _named_or_refused_block(collected, body, role, name, lineno)


def _named_or_refused_block(collected: list[Message] | None, body: str, role: Any, name: Any,
                            lineno: int) -> str:
    """``_message_block`` of a block with a name, or refused."""
    if role not in ROLES:
        raise jinja2.TemplateRuntimeError(
            f"message role {role!r} (line {lineno}) is not one of {', '.join(ROLES)}"
        )
    if _MARK in body:
        raise jinja2.TemplateRuntimeError(f"message blocks cannot nest (line {lineno})")
    name = f"{name}" if name else ""
    if _MARK in name:
        raise jinja2.TemplateRuntimeError(
            f"message name {name!r} (line {lineno}) holds a reserved control character")
    if collected is not None and (not name or _plain_text(name)):
        content = body.strip()
        collected.append({"role": role, "content": content, "name": name} if name
                         else {"role": role, "content": content})
        return _block_token(len(collected) - 1)
    return f"{_MARK}{role}{_MARK}{name}{_MARK}{lineno}{_MARK}{body}{_MARK}"


#: What a plain dict answers to as attributes: its class's methods and nothing else (a dict has
#: no attributes of its own).
_DICT_ATTRIBUTES = frozenset(dir(dict))


def _too_large(length: int) -> bool:
    return length > MAX_RENDER_CHARS


def _folded_size(value: Any) -> int:
    """How large a folded constant is: the length of a text, list, tuple or dict, nested ones
    counted (a number counts for nothing: the sandbox caps how large one may grow)."""
    if isinstance(value, (str, bytes)):
        return len(value)
    if isinstance(value, (list, tuple)):
        return len(value) + sum(_folded_size(item) for item in value
                                if isinstance(item, (str, bytes, list, tuple, dict)))
    if isinstance(value, dict):
        return len(value) + sum(_folded_size(item) for item in value.values()
                                if isinstance(item, (str, bytes, list, tuple, dict)))
    return 0


class _CappedOptimizer(Optimizer):
    """Jinja's constant folding, less any constant larger than a render may be: folded, it
    would be written into the template's compiled code (and kept with it)."""

    def generic_visit(self, node: nodes.Node, *args: Any, **kwargs: Any) -> nodes.Node:
        node = NodeTransformer.generic_visit(self, node, *args, **kwargs)
        if isinstance(node, nodes.Expr):
            self.environment.folding_line = node.lineno  # type: ignore[union-attr]
            try:
                value = node.as_const(args[0] if args else None)
                if not _too_large(_folded_size(value)):
                    return nodes.Const.from_untrusted(value, lineno=node.lineno,
                                                      environment=self.environment)
            except nodes.Impossible:
                pass
        return node


class _InlineReads(CodeGenerator):
    """Jinja's code generator, writing inline the three commonest steps of a render where they
    are plain: reading a key of a dict (``item.name``, ``item['name']``), an item of a list at
    a constant position (``items[0]``), and printing a string. Each is otherwise a call (the
    sandbox's getattr or getitem, then ``finalize`` and ``str``) that a phase of fifteen turns
    makes a hundred times; anything not plain is left to the call, which gives what it always
    did. The object read from is held in a local of the generated code (``_read``), assigned
    and read within one expression.

    It also folds no constant larger than a render may be (``_CappedOptimizer``): such a value
    is left to be built where the template runs, whose checks refuse it at its line."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.optimizer is not None:
            self.optimizer = _CappedOptimizer(self.environment)

    def _output_child_to_const(self, node: nodes.Expr, frame: Any, finalize: Any) -> str:
        self.environment.folding_line = node.lineno  # type: ignore[attr-defined]
        const = super()._output_child_to_const(node, frame, finalize)
        if _too_large(len(const)):
            raise nodes.Impossible
        return const

    @jinja2.compiler.optimizeconst
    def visit_Getattr(self, node: nodes.Getattr, frame: Any) -> None:
        if node.attr in _DICT_ATTRIBUTES or self.environment.is_async:
            CodeGenerator.visit_Getattr(self, node, frame)
            return
        # The sandbox's getattr of a dict reads the key, for a name no dict method has.
        self._read(node, frame, "dict", f"{node.attr!r} in _read",
                   f"environment.getattr(_read, {node.attr!r})", repr(node.attr))

    @jinja2.compiler.optimizeconst
    def visit_Getitem(self, node: nodes.Getitem, frame: Any) -> None:
        arg = node.arg
        if self.environment.is_async or not isinstance(arg, nodes.Const) or \
                type(arg.value) not in (str, int) or (type(arg.value) is int and arg.value < 0):
            CodeGenerator.visit_Getitem(self, node, frame)
            return
        key = repr(arg.value)
        fallback = f"environment.getitem(_read, {key})"
        if type(arg.value) is str:
            self._read(node, frame, "dict", f"{key} in _read", fallback, key)
        else:
            self._read(node, frame, "list", f"len(_read) > {key}", fallback, key)

    def _read(self, node: nodes.Getattr | nodes.Getitem, frame: Any, kind: str, present: str,
              fallback: str, key: str) -> None:
        self.write(f"(_read[{key}] if type(_read := ")
        self.visit(node.node, frame)
        self.write(f") is {kind} and {present} else {fallback})")

    def _output_child_pre(self, node: nodes.Expr, frame: Any, finalize: Any) -> None:
        if self._prints_inline(frame, finalize):
            # ``_finalize`` gives a string back as it is, and str() of one is itself.
            self.write("(_printed if type(_printed := ")
            return
        super()._output_child_pre(node, frame, finalize)

    def _output_child_post(self, node: nodes.Expr, frame: Any, finalize: Any) -> None:
        if self._prints_inline(frame, finalize):
            self.write(") is str else str(environment.finalize(_printed)))")
            return
        super()._output_child_post(node, frame, finalize)

    @jinja2.compiler.optimizeconst
    def visit_Concat(self, node: nodes.Concat, frame: Any) -> None:
        # ``~`` as Jinja writes it, but through ``concat_sized``: str() of a list, tuple or
        # dict runs in C, out of the alarm's reach, and is sized first.
        if frame.eval_ctx.volatile or frame.eval_ctx.autoescape:
            super().visit_Concat(node, frame)
            return
        self.write("environment.concat_sized((")
        for arg in node.nodes:
            self.visit(arg, frame)
            self.write(", ")
        self.write("))")

    def _prints_inline(self, frame: Any, finalize: Any) -> bool:
        return not frame.eval_ctx.volatile and not frame.eval_ctx.autoescape and \
            finalize.src == "environment.finalize(" and self.environment.finalize is _finalize


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
        result = super().call(__context, __obj, *args, **kwargs)
        # Only what makes characters from numbers needs looking at: every other text comes
        # from checked pools, slots and template literals.
        if type(result) is str and getattr(__obj, "__name__", None) in _MAKES_CHARACTERS:
            refuse_control_characters(result, f"{__obj.__name__}()")
        return result

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


def _plain_copy(value: Any) -> Any:
    """A copy of plain data, or None for anything else (which a memo does not keep)."""
    return copy_data(value) if is_plain(value) else None


#: The longest text, list or tuple (or widest integer, in bits) written into compiled code.
_FOLDED_MOST = 1024


class _FoldCheckedArithmetic(NodeTransformer):
    """Folds the arithmetic the sandbox intercepts (``*``, ``%``, ``**``) where both operands
    are constants and the sandbox's own check of the operation passes, as Jinja folds the
    rest; an operation it refuses is left to fail where the template runs, as before."""

    def __init__(self, env: _StrictSandbox) -> None:
        self.env = env

    def visit_BinExpr(self, node: nodes.BinExpr) -> nodes.Node:
        node = self.generic_visit(node)
        if node.operator not in self.env.intercepted_binops:
            return node
        try:
            eval_ctx = jinja2.nodes.EvalContext(self.env)
            value = self.env.call_binop(None, node.operator, node.left.as_const(eval_ctx),
                                        node.right.as_const(eval_ctx))
        except Exception:  # noqa: S110 (not foldable: it runs as written)
            return node
        size = len(value) if isinstance(value, (str, list, tuple)) else \
            value.bit_length() if isinstance(value, int) else 0
        if size > _FOLDED_MOST:
            return node  # a large value is built where it runs, not written into the code
        try:
            return nodes.Const.from_untrusted(value, lineno=node.lineno, environment=self.env)
        except nodes.Impossible:
            return node

    visit_Mul = visit_Mod = visit_Pow = visit_BinExpr


class _NameTracker(meta.TrackingCodeGenerator):
    """Jinja's tracker of the names a template reads from its context, globals included:
    Jinja's own leaves out names the environment defines, but a slot may shadow one (a slot
    named ``range`` is what a template reading ``range`` gets)."""

    def enter_frame(self, frame: Any) -> None:
        CodeGenerator.enter_frame(self, frame)
        for _, (action, param) in frame.symbols.loads.items():
            if action == "resolve":
                self.undeclared_identifiers.add(param)


#: What makes a template's output depend on files besides its own.
_REACHES_OTHERS = (nodes.Extends, nodes.Include, nodes.Import, nodes.FromImport)


#: Statements whose body prints into the output of the statement around them as it renders.
#: Every other statement that holds a body captures what its body prints (set, macro, call,
#: filter and block tags, a recursive loop's ``loop()``) and may change it before printing it.
_PRINTS_THROUGH = (nodes.For, nodes.If, nodes.With, nodes.Scope, nodes.ScopedEvalContextModifier)


def _is_message_block(node: nodes.Node) -> bool:
    return isinstance(node, nodes.FilterBlock) and isinstance(node.filter, nodes.Filter) and \
        node.filter.name == MESSAGE_FILTER


def _prints_directly(tree: nodes.Template) -> bool:
    """Whether every message block of a template prints what it returns straight into the
    template's output: not captured on the way (by a ``set`` block, a macro …), where the
    template could print it twice, in another order or changed; in a template that reaches no
    other (include, import, extends) and has no ``{% block %}`` (which ``self`` renders again,
    captured)."""
    if next(tree.find_all((*_REACHES_OTHERS, nodes.Block)), None) is not None:
        return False
    return _blocks_print_through(tree, True)


def _blocks_print_through(node: nodes.Node, through: bool) -> bool:
    """Whether the message blocks under ``node`` print into its output (``through``: what
    ``node`` prints reaches the template's output as it is)."""
    for child in node.iter_child_nodes():
        if _is_message_block(child):
            # A block inside another is an error its render reports.
            if not through or not _blocks_print_through(child, False):
                return False
        elif not _blocks_print_through(child, through and isinstance(child, _PRINTS_THROUGH)
                                       and not getattr(child, "recursive", False)):
            return False
    return True


class _TreeLoader(jinja2.BaseLoader):
    """Loads templates by path relative to templates/, refusing paths that leave it."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.loaded: set[Path] = set()
        self.names: set[str] = set()  # display names, as template code objects carry them

    def get_source(self, environment: jinja2.Environment, template: str) -> tuple[str, str, Any]:
        path = self.project.resolve_inside(self.project.templates, template, "template")
        text = read_text(path, self.project.display(path))
        if any(c in text for c in _RESERVED):
            raise SpecError.single("template contains reserved control characters",
                                   self.project.display(path), 1, 1)
        self.loaded.add(path)
        self.names.add(self.project.display(path))
        return text, self.project.display(path), lambda: True


def _article(word: str) -> str:
    return "an" if word[:1].lower() in "aeiou" else "a"


def _letter(index: int) -> str:
    if not isinstance(index, int) or index < 0 or index >= 26:
        raise jinja2.TemplateRuntimeError(f"letter needs an index in 0..25, got {index!r}")
    return chr(ord("A") + index)


def _add_days(day: str, days: int) -> str:
    """The ISO date ``days`` after ``day`` (calendar arithmetic only: no clock, no zone)."""
    try:
        start = datetime.date.fromisoformat(day)
    except (TypeError, ValueError):
        raise jinja2.TemplateRuntimeError(f"add_days needs an ISO date, got {day!r}") from None
    if not isinstance(days, int) or isinstance(days, bool) or abs(days) > 100_000:
        raise jinja2.TemplateRuntimeError(f"add_days needs a whole number of days, got {days!r}")
    return (start + datetime.timedelta(days=days)).isoformat()


def _safe_range(*args: int) -> range:
    result = range(*args)
    if len(result) > MAX_RANGE:
        raise SecurityError(f"range of {len(result)} items exceeds the limit of {MAX_RANGE}")
    return result


_UNPRINTABLE_HINT = "did you forget the () of a call, or a |list after map/select?"
#: How CPython prints an object that has no text of its own: ``<… at 0x7f3a…>``.
_OBJECT_ADDRESS_RE = re.compile(r"<[^<>\n]*? at 0x[0-9a-f]{6,}>", re.IGNORECASE)


def object_address(text: str) -> str | None:
    """The first ``<… at 0x…>`` in ``text``: an object printed with its memory address, which
    changes from run to run (a method or iterator turned into text by ``~``, ``|string``,
    ``%`` or ``.format``, perhaps upper-cased by a filter). None when there is none, which a
    substring test mostly settles: a ``<`` first, since one character is found by memchr and
    two by a loop that takes a hundred times as long over a rendered phase."""
    if "<" not in text or ("0x" not in text and "0X" not in text):
        return None
    found = _OBJECT_ADDRESS_RE.search(text)
    return found.group(0) if found else None


def _refuse_unprintable(value: Any) -> None:
    """Raise unless ``value`` is plain data throughout (strings, numbers, booleans, None, and
    lists, tuples and dicts of them); an undefined value raises its own error."""
    if type(value) in SCALARS:
        return
    if isinstance(value, jinja2.Undefined):
        value._fail_with_undefined_error()
    if isinstance(value, (list, tuple)):
        for item in value:
            _refuse_unprintable(item)
    elif isinstance(value, dict):
        for key, item in value.items():
            _refuse_unprintable(key)
            _refuse_unprintable(item)
    elif not isinstance(value, (str, int, float, bool)):
        raise jinja2.TemplateRuntimeError(
            f"a {type(value).__name__} cannot be printed ({_UNPRINTABLE_HINT})")



def _finalize(value: Any) -> Any:
    """Only plain data may be printed, inside lists and dicts too: a method or generator would
    print its memory address, which changes from run to run."""
    if type(value) is str:  # nearly every {{ }} of every template prints a string
        return value
    if isinstance(value, jinja2.Undefined):
        return value  # printing it raises the undefined error itself
    if isinstance(value, (list, tuple, dict)):
        # Its text is made by str() in C, out of the alarm's reach: sized first (before
        # its items are looked at too, which would take as long as they are many).
        refuse_over(text_length(value), f"printing a {type(value).__name__}")
    _refuse_unprintable(value)
    return value


@jinja2.pass_context
def _map(context: Any, value: Any, *args: Any, **kwargs: Any) -> Any:
    """Jinja's ``map``; the common ``map(attribute='name')`` reads each item as Jinja's getter
    would (the sandbox's getitem: the key of a dict, else the checked attribute), without the
    general getter's loop over dotted parts, defaults and post-processing."""
    attribute = kwargs.get("attribute")
    if args or len(kwargs) != 1 or type(attribute) is not str or not attribute.isidentifier():
        return jinja2.filters.sync_do_map(context, value, *args, **kwargs)
    return _map_attribute(context.environment.getitem, value, attribute)


def _map_attribute(getitem: Callable[[Any, str], Any], value: Any, attribute: str) -> Any:
    """An iterator over the values of ``attribute`` of the items, as Jinja's: for a list of
    dicts that all hold the key, read at once (reading a dict's key has no effect a later
    read could notice), else item by item as they are asked for."""
    if type(value) is list:
        try:
            return iter([item[attribute] for item in value])
        except (LookupError, TypeError, UndefinedError):  # an item without it: one by one
            pass
    return _each_attribute(getitem, value, attribute)


def _each_attribute(getitem: Callable[[Any, str], Any], value: Any, attribute: str) -> Any:
    if value:  # as Jinja's map: nothing from an empty or false value
        for item in value:
            yield item[attribute] if type(item) is dict and attribute in item else \
                getitem(item, attribute)


def _select_filter(keep: bool, by_attribute: bool, jinja_filter: Callable[..., Any]
                   ) -> Callable[..., Any]:
    """Jinja's select, reject, selectattr or rejectattr (``jinja_filter``); with a plain test
    named, and for the attribute forms a plain attribute name, it reads each item as Jinja's
    getter would (the key of a dict, else the sandbox's getitem) and calls the test as it is,
    where Jinja builds a getter and dispatches the test by name for every item."""

    @jinja2.pass_context
    def select(context: Any, value: Any, *args: Any, **kwargs: Any) -> Any:
        at = 1 if by_attribute else 0
        attribute = args[0] if by_attribute and args else None
        test = context.environment.plain_test(args[at]) if len(args) > at and not kwargs \
            else None
        if test is None or (by_attribute and not (type(attribute) is str
                                                  and attribute.isidentifier())):
            return jinja_filter(context, value, *args, **kwargs)
        return _selected(context.environment.getitem, value, attribute, test, args[at + 1:],
                         keep)

    return select


def _selected(getitem: Callable[[Any, str], Any], value: Any, attribute: str | None,
              test: Callable[..., Any], test_args: tuple[Any, ...], keep: bool) -> Any:
    if value:  # as Jinja's: nothing from an empty or false value
        for item in value:
            if attribute is None:
                subject = item
            elif type(item) is dict and attribute in item:
                subject = item[attribute]
            else:
                subject = getitem(item, attribute)
            if bool(test(subject, *test_args)) is keep:
                yield item


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


def make_environment(project: Project) -> _StrictSandbox:
    """The sandboxed Jinja environment every memspec template and expression runs in."""
    env = _StrictSandbox(
        finalize=_finalize,
        loader=_TreeLoader(project),
        undefined=jinja2.StrictUndefined,
        autoescape=False,
        trim_blocks=True,
        lstrip_blocks=True,
        keep_trailing_newline=False,
        extensions=[MessageExtension],
        auto_reload=False,
        cache_size=-1,
    )
    # Jinja registers its list filters (map, select, list, first …) as wrappers that ask, on
    # every call, whether the environment is async; this one never is, so the sync functions
    # they wrap are registered as they are.
    for name, function in list(env.filters.items()):
        sync = getattr(function, "__wrapped__", None)
        if getattr(sync, "__name__", "").startswith("sync_do_"):
            env.filters[name] = sync
    env.filters["map"] = _map
    for name, keep, by_attribute in (("select", True, False), ("reject", False, False),
                                     ("selectattr", True, True), ("rejectattr", False, True)):
        env.filters[name] = _select_filter(keep, by_attribute, env.filters[name])
    for name in ("lipsum", "cycler", "joiner"):
        env.globals.pop(name, None)
    env.globals["range"] = _safe_range
    env.filters.pop("random", None)
    env.filters["format"] = _checked_format(env.filters["format"])
    env.filters["re_escape"] = re.escape
    env.filters["letter"] = _letter
    env.filters["add_days"] = _add_days
    env.filters["match_lengths"] = match_lengths
    env.filters[MESSAGE_FILTER] = _message_block
    sized_filters(env.filters)
    return env


def _checked_format(format_filter: Callable[..., str]) -> Callable[..., str]:
    """Jinja's ``format`` filter, refusing a result with a control character
    (``"%c"|format(27)``)."""

    def checked_format(value: Any, *args: Any, **kwargs: Any) -> str:
        return refuse_control_characters(format_filter(value, *args, **kwargs), "format")

    return checked_format


# ---------------------------------------------------------------- error translation

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


def _template_frames(tb: TracebackType | None, names: set[str]) -> list[tuple[str, int]]:
    """(template file, line) of every traceback frame that runs template code, outermost first."""
    frames = []
    while tb is not None:
        filename = tb.tb_frame.f_code.co_filename
        if filename in names:
            frames.append((filename, tb.tb_lineno))
        tb = tb.tb_next
    return frames


def _column_of(source: str, line: int | None, needle: str | None) -> int:
    if line is None or not needle:
        return 1
    lines = source.splitlines()
    if 0 < line <= len(lines):
        found = lines[line - 1].find(needle)
        if found >= 0:
            return found + 1
    return 1


_UNDEFINED_NAME = re.compile(r"'([^']+)' is undefined|has no attribute '([^']+)'")
_ATTRIBUTE_NAME = re.compile(r"attribute '([^']+)'")


def memory_message() -> str:
    """What a template that runs out of memory is told."""
    return (f"template went over the memory budget of {group_megabytes()} MB for one group "
            "($MEMSPEC_GROUP_MEGABYTES): a string or list grown without bound?")


#: What a template that recurses without end is told.
RECURSION_MESSAGE = ("template recursion too deep: a template that includes, extends or "
                     "imports itself (directly or through others), or a macro that calls "
                     "itself without end")


def _describe_jinja_error(exc: BaseException) -> tuple[str, str | None]:
    if isinstance(exc, SecurityError):
        match = _ATTRIBUTE_NAME.search(str(exc))
        return f"unsafe template: {exc}", match.group(1) if match else None
    if isinstance(exc, UndefinedError):
        match = _UNDEFINED_NAME.search(str(exc))
        needle = (match.group(1) or match.group(2)) if match else None
        return f"undefined in template: {exc}{lookalike_note(needle or '')}", needle
    if isinstance(exc, MemoryError):
        return memory_message(), None
    if isinstance(exc, RecursionError):
        return RECURSION_MESSAGE, None
    return f"template error: {type(exc).__name__}: {exc}", None


def _deepest_bracket(env: jinja2.Environment, source: str) -> tuple[int, int]:
    """Line and column of the first bracket nested more than a hundred deep, or 1:1: where a
    template too deeply nested for Jinja's recursive parser goes wrong."""
    depth = 0
    try:
        for line, kind, value in env.lex(source):
            if kind == "operator" and value in "([{":
                depth += 1
                if depth > 100:
                    return line, _column_of(source, line, value)
            elif kind == "operator" and value in ")]}":
                depth -= 1
    except TemplateSyntaxError:
        pass
    return 1, 1


def _compile_budget_message(what: str, exc: BaseException) -> str:
    """Why compiling a template or expression was given up: its constant expressions, which
    Jinja works out while compiling, took longer or more memory than a group may."""
    if isinstance(exc, MemoryError):
        spent = f"more than the memory budget of {group_megabytes()} MB " \
                "($MEMSPEC_GROUP_MEGABYTES)"
    else:
        spent = f"longer than {group_seconds():g} s ($MEMSPEC_GROUP_SECONDS)"
    return f"{what} took {spent} to compile (its constant expressions are worked out then)"


@dataclass(frozen=True)
class TemplateOrigin:
    """Where a template's text came from, for error messages."""

    file: str
    line_offset: int = 0  # added to template lines (inline templates inside a YAML file)
    column: int | None = None
    label: str | None = None  # e.g. "inline template at $.phases.probe"

    def error(self, message: str, line: int | None, column: int | None = None) -> SpecError:
        """A SpecError at template ``line``/``column``, mapped into the file that holds it."""
        line = line or 1
        if self.label:
            message = f"{message} ({self.label}, template line {line})"
        if self.line_offset or self.column:
            # Inline template: its first line starts at (line_offset + 1, column) of the file.
            col = (self.column or 1) + (column or 1) - 1 if line == 1 else (column or 1)
            return SpecError.single(message, self.file, line + self.line_offset, col)
        return SpecError.single(message, self.file, line, column or 1)


class CompiledTemplate:
    """A template ready to render, that knows where its source is for error messages."""

    def __init__(self, template: jinja2.Template, source: str, origin: TemplateOrigin,
                 filename: str, included: set[str], project: Project) -> None:
        self.template = template
        self.source = source
        self.origin = origin
        self.filename = filename
        self._included = included  # display names of files loaded through include/import
        self._project = project
        #: Texts rendered before, by the values of the names the template reads.
        self.memo = InputMemo(self.free_names)
        #: The same for the messages of a phase.
        self.messages_memo = InputMemo(self.free_names)
        #: Whether its message blocks print straight into its output (worked out when first
        #: asked): then its messages are collected as it renders.
        self._blocks_print_directly: bool | None = None

    def free_names(self) -> tuple[str, ...] | None:
        """The names this template reads (None: it reaches other templates)."""
        env = self.template.environment
        return env.free_names("template", self.source,  # type: ignore[attr-defined]
                              lambda: env.parse(self.source))

    def _locate(self, exc: BaseException, message: str, needle: str | None) -> SpecError:
        """The error at the innermost template line it happened on, in whichever file."""
        frames = _template_frames(exc.__traceback__, self._included | {self.filename})
        file, line = frames[-1] if frames else (self.filename, None)
        if file == self.filename:
            return self.origin.error(message, line, _column_of(self.source, line, needle))
        try:
            source = self._project.path_of(file).read_text(encoding="utf-8")
        except OSError:
            source = ""
        return SpecError.single(message, file, line or 1, _column_of(source, line, needle))

    def _render(self, context: Mapping[str, Any],
                blocks: list[Message] | None = None) -> list[str]:
        """What ``Template.render`` does, over a context made by ``jinja_context``, up to
        joining the pieces of output; with ``blocks``, the messages of the message blocks are
        added to it and the blocks print their tokens (``_block_token``)."""
        template = self.template
        try:
            local = jinja_context(template, context)
            if blocks is not None:
                local.message_blocks = blocks
            return list(template.root_render_func(local))
        except (Exception, BudgetExceeded):
            template.environment.handle_exception()  # raised again, at the template's lines

    def render_text(self, context: Mapping[str, Any]) -> str:
        """Render to canonical text (NFC, ``\\n`` line endings, no lone surrogate); any failure
        is a SpecError at the template's file:line:col. The values it read met before, the
        text rendered then is given (``InputMemo``)."""
        return self.memo.result(context, self._render_text)

    def _render_text(self, context: Mapping[str, Any]) -> str:
        return self._canonical_text("".join(self._render_pieces(context)))

    def _render_pieces(self, context: Mapping[str, Any],
                       blocks: list[Message] | None = None) -> list[str]:
        """The pieces of output of a render (as ``_render``); any failure is a SpecError at
        the template's file:line:col."""
        try:
            return self._render(context, blocks)
        except SpecError as exc:
            if exc.problems and exc.problems[0].file is None:
                # Raised by the loader for an {% include %}/{% import %}: locate the tag.
                raise self._locate(exc, exc.problems[0].message, None) from None
            raise
        except TemplateSyntaxError as exc:  # in a template pulled in by include/import
            raise SpecError.single(f"template syntax error: {exc.message}",
                                   exc.filename or self.filename, exc.lineno or 1, 1) from None
        except BudgetExceeded as exc:
            if exc.where is None:  # the innermost render knows best where time ran out
                problem = self._locate(exc, "", None).problems[0]
                exc.where = (problem.file or self.filename, problem.line or 1,
                             problem.column or 1)
            raise
        except KeyboardInterrupt:
            raise
        except Exception as exc:  # every Jinja or sandbox failure becomes a located error
            message, needle = _describe_jinja_error(exc)
            located = self._locate(exc, message, needle)
            exc.__traceback__ = None  # let go of the frames and of what a runaway loop built
            raise located from None

    def _canonical_text(self, text: str) -> str:
        """The text of a render, refused if too long or holding an object's memory address,
        made canonical (NFC, ``\\n`` line endings, no lone surrogate): the same object where it
        was canonical as rendered (plain ASCII, no carriage return)."""
        if len(text) > MAX_RENDER_CHARS:
            raise self.origin.error(f"render produced {len(text)} characters, over the "
                                    f"{MAX_RENDER_CHARS} limit", 1)
        address = object_address(text)
        if address:
            raise self.origin.error(f"render printed an object with its memory address, "
                                    f"{address!r}, which changes from run to run "
                                    f"({_UNPRINTABLE_HINT})", 1)
        if "\r" in text:
            text = text.replace("\r\n", "\n").replace("\r", "\n")
        if text.isascii():
            return text
        if has_lone_surrogate(text):
            raise self.origin.error("render produced a lone surrogate (\\ud800-\\udfff), which "
                                    "UTF-8 cannot encode", 1)
        return unicodedata.normalize("NFC", text)

    def render_messages(self, context: Mapping[str, Any]) -> list[Message]:
        """Render and split the output into the messages its ``{% message %}`` blocks mark.
        The values it read met before, the messages rendered then are given (copies)."""
        return self.messages_memo.result(context, self._render_messages, _copy_messages)

    def _render_messages(self, context: Mapping[str, Any]) -> list[Message]:
        if self._blocks_print_directly is None:
            env = self.template.environment
            self._blocks_print_directly = env.blocks_print_directly(  # type: ignore[attr-defined]
                self.source, lambda: env.parse(self.source))
        if self._blocks_print_directly:
            # The blocks hand over their messages as they render and print tokens instead of
            # their text, which then need not be built, joined and split again.
            messages: list[Message] = []
            pieces = self._render_pieces(context, messages)
            if _collected_whole(pieces, messages):
                return messages
        # Rendered again by the markers, where they say what is wrong, if anything is.
        return split_messages(self._render_text(context), self)

    def column_in_line(self, line: int, needle: str) -> int:
        """Column of ``needle`` on ``line`` of the source, or 1."""
        return _column_of(self.source, line, needle)

    def find_line(self, needle: str) -> tuple[int, int]:
        """Line and column of ``needle`` in the source, or 1:1."""
        for number, text in enumerate(self.source.splitlines(), start=1):
            col = text.find(needle)
            if col >= 0:
                return number, col + 1
        return 1, 1


def split_messages(text: str, template: CompiledTemplate) -> list[Message]:
    """Split rendered text into messages; text outside message blocks must be blank.

    ``text`` is what ``render_text`` returned, so every part of it is already canonical: NFC,
    ``\\n`` line endings, no lone surrogate (``make_message`` keeps it so)."""
    parts = text.split(_MARK)
    if len(parts) % 5 != 1:
        # Markers a template wrote itself ("\x02" in a string literal), not the tag's.
        raise template.origin.error("rendered text holds the control character U+0002 outside "
                                    "the markers of a {% message %} block", 1)
    if "".join(parts[::5]).strip():
        # Stray text: find it in order, so the first problem in the output is the one named.
        for index in range(0, len(parts), 5):
            _check_outside(parts[index], template)
            if index + 4 < len(parts):
                _message_from_parts(parts, index + 1, template)
    roles, names, contents = parts[1::5], parts[2::5], [body.strip() for body in parts[4::5]]
    if "{" not in text and _ROLE_SET.issuperset(roles) and all(contents) and not any(names):
        # What make_message would make of each, without its checks one by one: nothing here
        # can fail them (a role of ROLES, no content empty, no brace for a placeholder).
        return [{"role": role, "content": content}
                for role, content in zip(roles, contents, strict=True)]
    return [_message_from_parts(parts, index, template) for index in range(1, len(parts), 5)]


def _collected_whole(pieces: list[str], messages: list[Message]) -> bool:
    """Whether the messages a render collected are what ``split_messages`` would make of its
    text: its pieces of output are the blocks' tokens, in order, and blank text between; no
    message is empty; and the contents are canonical as rendered (plain ASCII, no carriage
    return), hold no ``{`` (which ``make_message`` looks into) and no memory address, and are
    well within the length a render may have. Where any of it is not so, the render by the
    markers says what is wrong or makes what is right."""
    count = len(messages)
    if len(pieces) == count:  # nothing printed between the blocks (trim_blocks sees to it)
        printed, marks = pieces, count * (len(str(count)) + 2)  # the tokens' length at most
    else:
        # The non-blank pieces (str.strip gives a piece holding no outer whitespace back as
        # it is) against the tokens.
        printed, marks = list(filter(None, map(str.strip, pieces))), sum(map(len, pieces))
        if len(printed) != count:
            return False
    if not all(map(operator.is_, printed, _BLOCK_TOKENS)):  # by identity, in C
        return False
    contents = list(map(itemgetter("content"), messages))
    if not all(contents):
        return False
    text = "".join(contents)
    if len(text) + marks > MAX_RENDER_CHARS // 2 or "{" in text:
        return False
    if _plain_text(text):
        return True
    if "\r" in text or has_lone_surrogate(text) or object_address(text) is not None:
        return False
    # Text beyond ASCII, made NFC message by message: what NFC makes of the whole marked text,
    # since the markers compose with nothing, and stripping whitespace commutes with it.
    for message in messages:
        content = message["content"]
        if not content.isascii() and not unicodedata.is_normalized("NFC", content):
            message["content"] = unicodedata.normalize("NFC", content)
    return True


def _plain_text(text: str) -> bool:
    """Whether ``text`` is canonical as it is (plain ASCII without carriage returns) and holds
    no object's memory address."""
    return text.isascii() and "\r" not in text and object_address(text) is None


def _copy_messages(messages: list[Message]) -> list[Message]:
    return [dict(message) for message in messages]


def _message_from_parts(parts: list[str], index: int, template: CompiledTemplate) -> Message:
    """``make_message`` of the message whose role is ``parts[index]``."""
    role, name, line, body = parts[index:index + 4]
    return make_message(role, body, name, template, int(line) if line.isdigit() else 1)


_ROLE_SET = frozenset(ROLES)


def make_message(role: str, body: str, name: str | None, template: CompiledTemplate,
                 line: int = 1) -> Message:
    """A message from rendered text: stripped, refused if empty or if a ``{name}`` is left.

    ``line`` is where the message starts in the template (its ``{% message %}`` tag). Stripping
    keeps canonical text canonical: whitespace composes with nothing under NFC."""
    if role not in ROLES:
        # The {% message %} tag checks its role; this catches markers a template wrote itself
        # ("\x02…" in a string literal), whose messages the instance schema does not see.
        raise template.origin.error(f"message role {role!r} is not one of {', '.join(ROLES)}",
                                    line, template.column_in_line(line, "message"))
    content = body.strip()
    if not content:
        raise template.origin.error(f"{_article(role)} {role} message rendered empty", line,
                                    template.column_in_line(line, "message"))
    leftover = SINGLE_BRACE_RE.search(content) if "{" in content else None
    if leftover:
        line, col = template.find_line(leftover.group(0))
        raise template.origin.error(
            f"single-brace placeholder {leftover.group(0)!r} left in the output; "
            "Jinja variables are written {{ name }}",
            line, col,
        )
    if name:
        return {"role": role, "content": content, "name": name}
    return {"role": role, "content": content}


def _check_outside(chunk: str, template: CompiledTemplate) -> None:
    stray = chunk.strip()
    if stray:
        line, col = template.find_line(stray.splitlines()[0][:40])
        raise template.origin.error(
            f"text outside a {{% message %}} block: {stray[:60]!r}", line, col
        )


class Renderer:
    """Compiles templates and expressions once and renders them in the sandbox."""

    def __init__(self, project: Project) -> None:
        self.project = project
        self.env = make_environment(project)
        self._files: dict[str, CompiledTemplate] = {}
        self._file_paths: set[Path] = set()
        self._inline: dict[tuple[str, str, int, int, str], CompiledTemplate] = {}
        self._expressions: dict[tuple[str, TemplateOrigin], Callable[..., Any]] = {}
        self._compiled_expressions: dict[str, jinja2.Template] = {}
        self._expression_memos: dict[str, InputMemo] = {}
        self._codes: dict[tuple[str, str], Any] = {}  # Jinja's compiled code, by source and name
        self._globals = dict(self.env.make_globals(None))

    def add_globals(self, values: Mapping[str, Any]) -> None:
        """Names every template and expression of this renderer sees from now on, beneath
        their own (the helpers a command such as export offers its expressions)."""
        self.env.globals.update(values)
        self._globals.update(values)  # the dict every template of this renderer shares

    def scope(self, values: Mapping[str, Any]) -> RenderScope:
        """``values`` with Jinja's globals beneath them, for renders and expressions to share."""
        return RenderScope(self._globals, **values)

    def loaded_files(self) -> list[Path]:
        """Every template file read so far (directly or through include/extends/import)."""
        return sorted(self.env.loader.loaded | self._file_paths)  # type: ignore[union-attr]

    def take_fetched(self) -> list[tuple[str, str]]:
        """The templates that renders since the last call fetched through include, import or
        extends, in order, as (display name, SHA-256 of the bytes this process read of it,
        or "" where it read none); forgotten once handed out. The digest is of the one read
        that was compiled and rendered, so that a process that did not render the template
        never has to read it again to pin it."""
        fetched = sorted(self.env.fetched)
        self.env.fetched.clear()
        return [(name, read_digest(self.project.path_of(name)) or "") for name in fetched]

    def file(self, relative: str, origin: str | None = None, line: int | None = None,
             column: int | None = None) -> CompiledTemplate:
        """The template at ``templates/<relative>``; errors name the spec that asked for it."""
        if relative not in self._files:
            path = self.project.resolve_inside(self.project.templates, relative, "template",
                                               origin=origin, line=line, column=column)
            display = self.project.display(path)
            source = read_text(path, display)
            self._file_paths.add(path)
            self._files[relative] = self._compile(source, display, TemplateOrigin(display))
        return self._files[relative]

    def inline(self, source: str, file: str, line: int, column: int, label: str
               ) -> CompiledTemplate:
        """A template written inline in a YAML spec at ``file:line:column``."""
        key = (source, file, line, column, label)  # its errors name its own place and label
        if key not in self._inline:
            origin = TemplateOrigin(file, line - 1, column, label)
            # Named by its text, not its place: inline texts repeat across families (an answer
            # written the same way in each), and one name lets them share one compiled code.
            # The origin still says where this one is written, for its errors.
            name = f"<inline {xxhash.xxh3_64_hexdigest(source.encode('utf-8', 'surrogatepass'))}>"
            self._inline[key] = self._compile(source, name, origin)
        return self._inline[key]

    def _compile(self, source: str, filename: str, origin: TemplateOrigin) -> CompiledTemplate:
        if any(c in source for c in _RESERVED):
            raise origin.error("template contains reserved control characters", 1)
        self.env.folding_line = None
        try:
            code = self._codes.get((source, filename))
            if code is None:
                code = self._codes[source, filename] = self.env.compile(source, name=filename,
                                                                        filename=filename)
        except TemplateSyntaxError as exc:
            raise origin.error(f"template syntax error: {exc.message}", exc.lineno) from None
        except RecursionError:
            line, column = _deepest_bracket(self.env, source)
            raise origin.error("template is nested too deeply to compile (brackets or "
                               "blocks hundreds deep)", line, column) from None
        except (BudgetExceeded, MemoryError) as exc:
            raise origin.error(_compile_budget_message("template", exc),
                               self.env.folding_line or 1) from None
        return CompiledTemplate(self._template(code), source, origin, filename,
                                self.env.loader.names,  # type: ignore[union-attr]
                                self.project)

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

    def _template(self, code: CodeType) -> jinja2.Template:
        # Globals in a plain dict, not Jinja's ChainMap: every render copies the globals, and
        # copying a ChainMap costs more than rendering a short template.
        return self.env.template_class.from_code(self.env, code, self._globals)

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
                    return value
                except (SpecError, BudgetExceeded):
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

