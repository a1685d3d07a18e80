"""The one door to Jinja: the environment every memspec template and expression runs in
(``make_environment``), templates compiled and rendered into role-tagged messages
(``CompiledTemplate``), and the ``Renderer`` that compiles each template and expression once.

Templates may come from strangers, so they run in Jinja's immutable sandbox; an unsafe
attribute is an error (not a silent blank), undefined names are errors, and nothing random or
clock-based is available. Every Jinja error becomes a SpecError naming the template file,
line and column.

The rest of memspec imports Jinja's machinery from here only. What leans on Jinja's
internals, and so may change with a Jinja upgrade, lives in the ``jinja_*`` modules behind
this one: the sandbox (``jinja_sandbox``), its code generator and optimizer
(``jinja_codegen``), its runtime context (``jinja_context``), the ``{% message %}`` block
(``jinja_messages``), expressions (``jinja_expressions``), filters (``jinja_filters``,
``jinja_sized_filters``, which sizes work done in C with ``jinja_text_sizes``), the loader
(``jinja_loader``), what may print (``jinja_output``) and the description of Jinja's errors
(``jinja_errors``).
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from types import CodeType
from typing import Any

import jinja2
import xxhash
from jinja2.exceptions import TemplateSyntaxError

from ..core.canonical import has_lone_surrogate
from ..core.errors import SpecError
from ..core.length_match import match_lengths
from ..core.limits import BudgetExceeded
from ..core.word_forms import word_forms
from ..spec.project import Project
from ..spec.yamlsafe import read_digest, read_text
from .jinja_context import RenderScope, _expression_context, expression_scope, jinja_context
from .jinja_errors import (
    RECURSION_MESSAGE,
    _column_of,
    _compile_budget_message,
    _deepest_bracket,
    _describe_jinja_error,
    _template_frames,
    memory_message,
)
from .jinja_expressions import ExpressionCompiler
from .jinja_filters import (
    _add_days,
    _checked_format,
    _letter,
    _map,
    _safe_range,
    _select_filter,
)
from .jinja_loader import _TreeLoader
from .jinja_messages import (
    MESSAGE_FILTER,
    MessageExtension,
    _collected_whole,
    _copy_messages,
    _message_block,
    make_message,
    split_messages,
)
from .jinja_output import (
    _RESERVED,
    _UNPRINTABLE_HINT,
    MAX_RANGE,
    MAX_RENDER_CHARS,
    ROLES,
    SINGLE_BRACE_RE,
    Message,
    _finalize,
    object_address,
    refuse_control_characters,
)
from .jinja_sandbox import _compile_fingerprint, _StrictSandbox
from .jinja_sized_filters import sized_filters
from .jinja_walks import gate_all
from .memo import InputMemo

#: What other modules import from here: the interface to Jinja, and the names of the jinja_
#: modules that were once defined here (tests read a few private ones).
__all__ = [
    "MAX_RANGE",
    "MAX_RENDER_CHARS",
    "RECURSION_MESSAGE",
    "ROLES",
    "SINGLE_BRACE_RE",
    "CompiledTemplate",
    "Message",
    "RenderScope",
    "Renderer",
    "TemplateOrigin",
    "_compile_fingerprint",
    "_expression_context",
    "expression_scope",
    "jinja_context",
    "make_environment",
    "make_message",
    "memory_message",
    "object_address",
    "refuse_control_characters",
    "split_messages",
]


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
    env.filters["word_forms"] = word_forms
    env.filters["letter"] = _letter
    env.filters["add_days"] = _add_days
    env.filters["match_lengths"] = match_lengths
    env.filters[MESSAGE_FILTER] = _message_block
    # Every filter and test sizes what it is handed by its logical size (``jinja_walks``);
    # the filters whose work in C has an estimate of its own check that first, so that the
    # error says what they would have built.
    gate_all("filter", env.filters)
    gate_all("test", env.tests)
    sized_filters(env.filters)
    return env


class Renderer(ExpressionCompiler):
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

    def _template(self, code: CodeType) -> jinja2.Template:
        # Globals in a plain dict, not Jinja's ChainMap: every render copies the globals, and
        # copying a ChainMap costs more than rendering a short template.
        return self.env.template_class.from_code(self.env, code, self._globals)
