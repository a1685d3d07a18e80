"""The cache of compiled code: a later run loads what an earlier one compiled, the output is
the same byte for byte, and a damaged, missing or unwritable cache only means compiling."""

from __future__ import annotations

import contextlib
import hashlib
import marshal
import os
import subprocess
import sys
from pathlib import Path

import jinja2.defaults
import jinja2.environment
import markupsafe
import pytest

from conftest import REPO, run_cli
from memspec.core import code_cache
from memspec.core.code_cache import CACHE_DIR_VARIABLE, KEY_FILE
from memspec.core.errors import SpecError
from memspec.engine.render import Renderer, _compile_fingerprint, make_environment
from memspec.spec import schemas, yamlsafe
from memspec.spec.project import Project
from memspec.spec.yamlsafe import load_yaml_text

#: A family whose group uses templates, includes, inline texts and expressions.
FAMILY = "trustgap.memory_trust.airline"


def _entries(folder: Path) -> dict[str, bytes]:
    """The cache's entries (its secret left out)."""
    return {p.relative_to(folder).as_posix(): p.read_bytes()
            for p in sorted(folder.rglob("*")) if p.is_file() and p.name != KEY_FILE}


def _render_everything(renderer: Renderer) -> list[object]:
    """What a family's generation compiles: a file template with includes, an inline
    template and an expression, each rendered."""
    context = {"items": [{"name": "b"}, {"name": "a"}]}
    inline = renderer.inline('{% message "user" %}{{ items | map(attribute="name") | sort | '
                             'join(",") }}{% endmessage %}', "specs/x.yaml", 3, 5, "a test")
    expression = renderer.expression("items | selectattr('name', 'eq', 'a') | list | length",
                                     inline.origin)
    return [inline.render_messages(context), expression(context),
            renderer.file("trustgap/context.j2").source]


def test_a_second_process_writes_the_same_bytes_and_adds_no_entry(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    args = ("generate", FAMILY, "--groups", "2", "--seed", "7")
    first = run_cli(*args, env={CACHE_DIR_VARIABLE: str(cache)})
    assert first.returncode == 0, first.stderr
    filled = _entries(cache)
    assert any(name.startswith("jinja/") for name in filled)
    assert any(name.startswith("fastjsonschema/") for name in filled)

    second = run_cli(*args, env={CACHE_DIR_VARIABLE: str(cache)})
    assert second.returncode == 0, second.stderr
    assert second.stdout == first.stdout
    assert _entries(cache) == filled  # everything was found; nothing was written again

    off = run_cli(*args, env={CACHE_DIR_VARIABLE: ""})
    assert off.returncode == 0, off.stderr
    assert off.stdout == first.stdout


def test_a_filled_cache_compiles_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                         ) -> None:
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(tmp_path))
    schemas.fast_check.cache_clear()
    expected = _render_everything(Renderer(Project(REPO)))
    assert schemas.fast_check("pool")({"pool": "a.b", "description": "d", "items": [1]})

    def no_compiling(*args: object, **kwargs: object) -> None:
        raise AssertionError("compiled although the cache holds the code")

    # Jinja's code generator and fastjsonschema's are both unreachable now.
    monkeypatch.setattr(jinja2.environment, "generate", no_compiling)
    monkeypatch.setattr("fastjsonschema.compile_to_code", no_compiling)
    schemas.fast_check.cache_clear()
    try:
        assert _render_everything(Renderer(Project(REPO))) == expected
        check = schemas.fast_check("pool")
        assert check({"pool": "a.b", "description": "d", "items": [1]})
        assert not check({"pool": "a.b", "items": [1]})
    finally:
        schemas.fast_check.cache_clear()


def test_a_damaged_or_unwritable_cache_only_means_compiling_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(tmp_path / "cache"))
    expected = _render_everything(Renderer(Project(REPO)))
    filled = _entries(tmp_path / "cache")
    for index, name in enumerate(filled):
        path = tmp_path / "cache" / name
        data = path.read_bytes()
        # Torn, flipped in the checksum, flipped in the code, emptied.
        path.write_bytes([data[: len(data) // 2], bytes([data[0] ^ 1]) + data[1:],
                          data[:-1] + bytes([data[-1] ^ 1]), b""][index % 4])
    assert _render_everything(Renderer(Project(REPO))) == expected
    assert _entries(tmp_path / "cache") == filled  # each damaged entry was written anew

    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder\n")
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(blocker / "cache"))
    assert _render_everything(Renderer(Project(REPO))) == expected


def _counting_compiles(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """A list that grows by one for each template Jinja compiles from now on."""
    compiled: list[object] = []
    generate = jinja2.environment.generate

    def counting(*args: object, **kwargs: object) -> object:
        compiled.append(args[0])
        return generate(*args, **kwargs)

    monkeypatch.setattr(jinja2.environment, "generate", counting)
    return compiled


def test_a_cache_others_may_write_to_is_not_read(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(tmp_path / "filled"))
    expected = _render_everything(Renderer(Project(REPO)))
    compiled = _counting_compiles(monkeypatch)
    kind = tmp_path / "filled" / "jinja"
    entry = next(kind.iterdir())
    for path, mode, compiles in ((kind, 0o700, False), (kind, 0o777, True),
                                 (kind, 0o720, True), (entry, 0o622, True),
                                 (entry, 0o606, True)):
        original = path.stat().st_mode & 0o777
        path.chmod(mode)
        compiled.clear()
        try:
            assert _render_everything(Renderer(Project(REPO))) == expected
        finally:
            path.chmod(original)
        assert bool(compiled) == compiles, (path.name, oct(mode))


def _planted(code_path: Path, marker: Path) -> bytes:
    """A payload that, loaded as an entry and run, writes ``marker``: what an attacker who
    can write into a cache would plant under a real entry's name."""
    return marshal.dumps(compile(f"open({str(marker)!r}, 'w').write('ran')\n", "<planted>",
                                 "exec"))


def _sign(root: Path, entry: Path, payload: bytes) -> bytes:
    """``payload`` as an entry at ``entry`` tagged with the key of the cache at ``root``."""
    key = code_cache._read_secret(root / KEY_FILE)
    assert key is not None
    label = entry.relative_to(root).as_posix().encode()
    return code_cache._tag(key, label, payload) + payload


def test_an_entry_tagged_right_runs_so_the_planting_tests_below_can_fail(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache, marker = tmp_path / "cache", tmp_path / "ran"
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(cache))
    _render_everything(Renderer(Project(REPO)))
    for entry in (cache / "jinja").iterdir():
        entry.write_bytes(_sign(cache, entry, _planted(entry, marker)))
    with contextlib.suppress(Exception):
        _render_everything(Renderer(Project(REPO)))
    assert marker.exists()  # the key is the cache's own: its entries are trusted


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() != 0,
                    reason="giving a file to another user needs root")
@pytest.mark.parametrize("owned_by_another", ["root", "kind", "entry", "key"])
def test_an_entry_another_user_could_have_written_never_runs(
        owned_by_another: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cache, marker = tmp_path / "cache", tmp_path / "ran"
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(cache))
    expected = _render_everything(Renderer(Project(REPO)))
    for entry in (cache / "jinja").iterdir():
        entry.write_bytes(_sign(cache, entry, _planted(entry, marker)))
    entry = next((cache / "jinja").iterdir())
    target = {"root": cache, "kind": cache / "jinja", "entry": entry,
              "key": cache / KEY_FILE}[owned_by_another]
    stranger = 4242
    if owned_by_another == "entry":
        for each in (cache / "jinja").iterdir():
            os.chown(each, stranger, stranger)
    else:
        os.chown(target, stranger, stranger)
    code_cache._keys.clear()  # a new process: the root is checked afresh
    assert _render_everything(Renderer(Project(REPO))) == expected
    assert not marker.exists()


def test_an_entry_only_content_hashed_never_runs(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    cache, marker = tmp_path / "cache", tmp_path / "ran"
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(cache))
    expected = _render_everything(Renderer(Project(REPO)))
    for entry in (cache / "jinja").iterdir():
        payload = _planted(entry, marker)
        entry.write_bytes(hashlib.sha256(payload).digest() + payload)  # the old, unkeyed form
    assert _render_everything(Renderer(Project(REPO))) == expected
    assert not marker.exists()


def test_a_symlinked_cache_root_or_entry_is_not_followed(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    real, marker = tmp_path / "real", tmp_path / "ran"
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(real))
    expected = _render_everything(Renderer(Project(REPO)))
    for entry in (real / "jinja").iterdir():
        entry.write_bytes(_sign(real, entry, _planted(entry, marker)))
    link = tmp_path / "link"
    link.symlink_to(real)
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(link))
    compiled = _counting_compiles(monkeypatch)
    assert _render_everything(Renderer(Project(REPO))) == expected
    assert compiled and not marker.exists()


def test_a_cold_and_a_warm_cache_give_the_same_bytes_across_a_version_change(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Jinja folds ``"<b>"|escape`` into a constant while compiling, with MarkupSafe's code:
    a cache filled under one MarkupSafe must not hand its constant to another."""
    source = '{% message "user" %}{{ "<b>" | escape }} {{ "x" | upper }}{% endmessage %}'

    def render() -> object:
        renderer = Renderer(Project(REPO))
        return renderer.inline(source, "specs/x.yaml", 1, 1, "a test").render_messages({})

    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(tmp_path / "warm"))
    before = render()
    assert "&lt;b&gt;" in str(before)

    # Another MarkupSafe, which escapes otherwise.
    def other_escape(value: object) -> markupsafe.Markup:
        return markupsafe.Markup(str(value).replace("<", "[").replace(">", "]"))

    other_escape.__module__ = "markupsafe"
    monkeypatch.setitem(jinja2.defaults.DEFAULT_FILTERS, "escape", other_escape)
    monkeypatch.setattr(code_cache, "_distribution_version",
                        lambda package: "99.0" if package == "markupsafe" else
                        _real_version(package))
    warm = render()
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(tmp_path / "cold"))
    cold = render()
    monkeypatch.setenv(CACHE_DIR_VARIABLE, "")
    assert warm == cold == render()
    assert "[b]" in str(cold) and warm != before


_real_version = code_cache._distribution_version


def test_a_template_that_fails_to_compile_leaves_no_entry(tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(tmp_path))
    origin = Renderer(Project(REPO)).inline("ok", "specs/x.yaml", 1, 1, "a test").origin
    assert len(_entries(tmp_path)) == 1
    for _ in range(2):  # the second time, too, each error comes from compiling
        renderer = Renderer(Project(REPO))
        with pytest.raises(SpecError) as raised:
            renderer.inline("{% message 'user' %}{{ a + }}{% endmessage %}", "specs/x.yaml",
                            9, 3, "a test")
        problem = raised.value.problems[0]
        assert "syntax error" in problem.message and problem.line == 9
        with pytest.raises(SpecError, match="expression syntax error"):
            renderer.expression("a +", origin)
    assert len(_entries(tmp_path)) == 1


def test_the_fingerprint_covers_options_filters_and_is_the_same_in_every_process() -> None:
    project = Project(REPO)
    base = _compile_fingerprint(make_environment(project))
    with_filter = make_environment(project)
    with_filter.filters["shout"] = str.upper
    untrimmed = make_environment(project)
    untrimmed.trim_blocks = False
    assert len({base, _compile_fingerprint(with_filter), _compile_fingerprint(untrimmed)}) == 3

    code = ("from memspec.spec.project import Project; from pathlib import Path;"
            "from memspec.engine.render import _compile_fingerprint, make_environment;"
            f"print(_compile_fingerprint(make_environment(Project(Path({str(REPO)!r})))))")
    for seed, zone, locale in (("0", "UTC", "C"), ("4242", "Asia/Tokyo", "C.UTF-8")):
        env = {**os.environ, "PYTHONHASHSEED": seed, "TZ": zone, "LC_ALL": locale}
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                env=env, check=True)
        assert result.stdout.strip() == base


def test_the_fingerprint_covers_the_source_of_every_module_behind_the_render_door(
        monkeypatch: pytest.MonkeyPatch) -> None:
    # Jinja's specifics live in modules of their own (jinja_*.py) behind render.py: a change
    # to any of them must make new cache entries, or a stale compiled code would run. Each
    # module is "changed" as the digest reads it (nothing on disk is touched).
    package = sys.modules[code_cache.__name__.partition(".")[0]]
    modules = sorted(Path(package.__file__).resolve().parent.rglob("jinja_*.py"))
    assert len(modules) >= 5
    env = make_environment(Project(REPO))
    original = Path.read_bytes

    def fingerprint_with(changed: Path | None) -> str:
        def read_bytes(path: Path) -> bytes:
            data = original(path)
            return data + b"# changed\n" if path == changed else data

        monkeypatch.setattr(Path, "read_bytes", read_bytes)
        code_cache.package_source_digest.cache_clear()
        try:
            return _compile_fingerprint(env)
        finally:
            monkeypatch.undo()
            code_cache.package_source_digest.cache_clear()

    base = fingerprint_with(None)
    changed = [fingerprint_with(module) for module in modules]
    assert base == _compile_fingerprint(env)
    assert base not in changed and len(set(changed)) == len(changed) == len(modules)


def test_a_parse_is_kept_and_each_load_gets_data_of_its_own(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(tmp_path))
    text = (REPO / "specs" / "families").rglob("*.yaml").__next__().read_text()
    first = load_yaml_text(text, "specs/a.yaml")
    assert len(_entries(tmp_path / "yaml")) == 1

    def no_parsing(*args: object, **kwargs: object) -> None:
        raise AssertionError("parsed although the cache holds the result")

    with monkeypatch.context() as patched:
        patched.setattr(yamlsafe, "_construct", no_parsing)
        second = load_yaml_text(text, "specs/b.yaml")
    assert (second.data, second.positions, second.text_starts) == \
        (first.data, first.positions, first.text_starts)
    assert second.file == "specs/b.yaml"
    first.data["changed"] = True  # a caller's edit reaches no other load
    assert "changed" not in load_yaml_text(text, "specs/c.yaml").data

    for _ in range(2):  # bad YAML is parsed, and refused, every time
        with pytest.raises(SpecError) as raised:
            load_yaml_text("a: 1\na: 2\n", "specs/bad.yaml")
        assert (raised.value.problems[0].file, raised.value.problems[0].line) == \
            ("specs/bad.yaml", 2)
    assert len(_entries(tmp_path / "yaml")) == 1


def test_a_poisoned_yaml_parse_never_bypasses_the_yaml_checks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A parse planted under the name of a file's parse (a tag's object, say, which the strict
    loader refuses) is not taken: unless tagged with this user's key, the file is parsed, and
    checked, again."""
    cache = tmp_path / "cache"
    monkeypatch.setenv(CACHE_DIR_VARIABLE, str(cache))
    text = "a: 1\n"
    honest = load_yaml_text(text, "specs/a.yaml")
    (entry,) = (cache / "yaml").iterdir()
    poisoned = marshal.dumps(({"a": "!!python/object/apply:os.system"}, {}, {}))
    for forged in (hashlib.sha256(poisoned).digest() + poisoned,  # content-hashed only
                   bytes(32) + poisoned):  # a guessed tag
        entry.write_bytes(forged)
        again = load_yaml_text(text, "specs/a.yaml")
        assert again.data == honest.data == {"a": 1}
