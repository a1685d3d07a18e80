"""Jinja's code generator and optimizer, adapted: reads of dict keys and list items and
printed strings written inline, constant folding capped at the size a render may have,
the sandbox's checked arithmetic folded where it is safe, and the tracker of the names a
template reads."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import jinja2
from jinja2 import meta, nodes
from jinja2.compiler import CodeGenerator, operators
from jinja2.optimizer import Optimizer
from jinja2.visitor import NodeTransformer

from .jinja_output import _finalize, _too_large
from .jinja_text_sizes import text_length

if TYPE_CHECKING:
    from .jinja_sandbox import _StrictSandbox


#: What a plain dict answers to as attributes: its class's methods and nothing else (a dict has
#: no attributes of its own).
_DICT_ATTRIBUTES = frozenset(dir(dict))


class _CappedOptimizer(Optimizer):
    """Jinja's constant folding, less any constant larger than a render may be: folded, it
    would be written into the template's compiled code (and kept with it)."""

    def generic_visit(self, node: nodes.Node, *args: Any, **kwargs: Any) -> nodes.Node:
        node = NodeTransformer.generic_visit(self, node, *args, **kwargs)
        if isinstance(node, nodes.Expr):
            self.environment.folding_line = node.lineno  # type: ignore[union-attr]
            try:
                value = node.as_const(args[0] if args else None)
                # Its logical size: a list repeated level by level is counted as written out.
                if not _too_large(text_length(value)):
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

    @jinja2.compiler.optimizeconst
    def visit_Compare(self, node: nodes.Compare, frame: Any) -> None:
        # ``==``, ``<``, ``in`` … of two containers walk both in C: each operand that is not
        # a constant is sized first (``walked_operand``). Against a constant, a comparison
        # reads no more than the constant holds, and is written as Jinja writes it; but not
        # ``in`` a constant dict, which hashes the whole of what it looks for.
        operands = [node.expr, *(op.expr for op in node.ops)]
        if len(node.ops) == 1 and node.ops[0].op not in ("in", "notin") and \
                any(isinstance(o, nodes.Const) for o in operands):
            super().visit_Compare(node, frame)
            return
        self.write("(")
        self._walked(node.expr, frame, f"'{operators[node.ops[0].op]}'")
        for op in node.ops:
            self.write(f" {operators[op.op]} ")
            self._walked(op.expr, frame, f"'{operators[op.op]}'")
        self.write(")")

    def visit_Dict(self, node: nodes.Dict, frame: Any) -> None:
        # A key is hashed, in C (a tuple's items all through): sized first.
        self.write("{")
        for idx, item in enumerate(node.items):
            if idx:
                self.write(", ")
            self._walked(item.key, frame, "a dict key")
            self.write(": ")
            self.visit(item.value, frame)
        self.write("}")

    def _walked(self, node: nodes.Expr, frame: Any, what: str) -> None:
        """``node`` written as ``walked_operand`` of it (``what`` it is handed to), unless it
        is a constant."""
        if isinstance(node, nodes.Const):
            self.visit(node, frame)
            return
        self.write("environment.walked_operand(")
        self.visit(node, frame)
        self.write(f", {what!r})")

    def _prints_inline(self, frame: Any, finalize: Any) -> bool:
        return not frame.eval_ctx.volatile and not frame.eval_ctx.autoescape and \
            finalize.src == "environment.finalize(" and self.environment.finalize is _finalize


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
        # A list's logical size: ``[[1]*2]*2`` … is small in memory and huge written out (and
        # Jinja would walk every item of it to write it into the code).
        size = value.bit_length() if type(value) is int else text_length(value)
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
