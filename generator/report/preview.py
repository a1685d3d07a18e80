"""``memspec preview``: a family's first groups as a page, variants side by side.

For an author at work: each group shows every variant in a row (experimental beside control,
veridical beside its counterfeits and corruptions), and what a variant changes with respect
to the group's first variant is marked. The family's checks are run too; a failure does not
stop the preview (that is when an author most needs to see the instances), it is listed at
the top. Checks over the whole release (balance) are not decided on a few groups: the page
names them, with their counts so far, apart from the failures.
"""

from __future__ import annotations

from functools import partial
from html import escape

from ..core.errors import CheckFailed
from ..engine.checks import RenderedVariant
from ..engine.generate import FamilyGenerator
from ..engine.render import Renderer
from ..release.html_page import page, variants_html
from ..spec.spec import FamilySpec


def render_preview(family: FamilySpec, renderer: Renderer, seed: int, groups: int) -> str:
    """The preview page of ``groups`` groups of ``family`` under ``seed``."""
    generator = FamilyGenerator(family, renderer, seed)
    rendered: list[list[RenderedVariant]] = []
    problems: list[str] = []
    for group in range(groups):
        _, variants = generator.render_group(group)
        rendered.append(variants)
        try:
            generator.within_budget(group, partial(generator.checks.check_group, variants))
        except CheckFailed as err:
            problems += [p.message for p in err.problems]
    # Balance holds over a whole run (a release's groups), not over a few: said, never
    # called failed here.
    whole_run = generator.checks.balance_counts()
    body = [f"<p>{escape(' '.join(family.description.split()))}</p>",
            f'<p class="note">Paradigm <code>{escape(family.paradigm.paradigm_id)}</code>, '
            f"version {family.version}; seed {seed}; {groups} groups of "
            f"{len(generator.variants)} variants at most. Marked: what differs from the "
            "group's first variant.</p>"]
    if problems:
        body.append('<div class="problems"><h2 class="fail">Checks that fail</h2><ul>'
                    + "".join(f'<li class="fail">{escape(p)}</li>' for p in problems)
                    + "</ul></div>")
    if whole_run:
        body.append('<div class="whole-run"><h2>Checks that need the whole release</h2>'
                    '<p class="note">Decided over every group a release holds (by '
                    "<code>memspec generate</code> and <code>freeze</code>), not over the "
                    f"{groups} group(s) shown here; their counts so far:</p><ul>"
                    + "".join(f"<li>balanced: <code>{escape(what)}</code> ({escape(shown)})"
                              "</li>" for _, what, shown, _ in whole_run)
                    + "</ul></div>")
    for index, variants in enumerate(rendered):
        instances = [v.instance for v in variants]
        body += [f'<section class="group" data-group="{index}">',
                 f"<h2>Group {index}</h2>", variants_html(instances, " (reference)"),
                 "</section>"]
    return page(f"Preview: {family.family_id}", body)
