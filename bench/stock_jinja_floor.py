"""The script a user would write by hand instead of memspec, as a second floor for generation.

    python bench/stock_jinja_floor.py --groups 20000 --out FILE   # the script itself
    python bench/stock_jinja_floor.py --compare                    # it against `memspec generate`

The script renders the family implicitmem.procedural.cache_key_prefix from the same spec,
pools and templates, the way someone would without memspec: PyYAML to read them, stock Jinja
(not sandboxed, no size limits, no memo), Python's `random` to draw the slots, each
``{% message %}`` block of a template turned into a marker before rendering and split out
after, and `json.dumps` to write each instance, with the shape memspec writes (id, family,
group, the phases' messages, the answer with its gold, example and distractors, axes,
fields). It checks nothing. It imports nothing of memspec.

bench/bench.py (a) compares memspec with a faster floor: the family's templates compiled by
memspec itself and handed the values memspec drew. This one is what a user would compare
against: whole processes, each started from nothing, CPU seconds (user + system) and peak
RSS from the kernel. --compare runs both in turns, --pairs times, and reports the median of
the pairs' ratios (the script's CPU seconds over memspec's: above 1, memspec is faster).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import re
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import jinja2
import yaml

REPO = Path(__file__).resolve().parent.parent
FAMILY = "implicitmem.procedural.cache_key_prefix"
FAMILY_FILE = REPO / "specs" / "families" / "implicitmem" / "procedural" / "cache_key_prefix.yaml"

#: A message block of memspec's templates, as markers stock Jinja renders through.
_OPEN = re.compile(r'{%-?\s*message\s+"(\w+)"\s*-?%}')
_CLOSE = re.compile(r"{%-?\s*endmessage\s*-?%}")
_MESSAGE = re.compile(r"\x00(\w+)\x01(.*?)\x02", re.DOTALL)


def load_yaml(path: Path) -> Any:
    with path.open(encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def template(environment: jinja2.Environment, relative: str) -> jinja2.Template:
    """A template of templates/, its message blocks turned into markers."""
    text = (REPO / "templates" / relative).read_text(encoding="utf-8")
    text = _CLOSE.sub("\x02", _OPEN.sub(lambda m: f"\x00{m[1]}\x01", text))
    return environment.from_string(text)


def messages(rendered: str) -> list[dict[str, str]]:
    """The messages a rendered template holds, each stripped as memspec strips them."""
    return [{"content": text.strip(), "role": role}
            for role, text in _MESSAGE.findall(rendered)]


def generate(groups: int, out: Path, seed: int = 0) -> None:
    """Render ``groups`` groups of the family into ``out`` as JSONL."""
    family = load_yaml(FAMILY_FILE)
    pools = {name: load_yaml(REPO / "specs" / slot["from"])["items"]
             for name, slot in family["slots"].items() if "from" in slot}
    environment = jinja2.Environment(keep_trailing_newline=True)
    environment.filters["re_escape"] = re.escape
    phases = {name: template(environment, relative)
              for name, relative in family["phases"].items()}
    answer = family["answer"]
    texts = {key: environment.from_string(answer[key])
             for key in ("gold", "example", "remembered", "prior")}
    distractors = {key: environment.from_string(text)
                   for key, text in answer["distractors"].items()}
    teams, settings_pool, chatter_pool = pools["team"], pools["settings"], pools["chatter"]
    with out.open("w", encoding="utf-8") as handle:
        for group in range(groups):
            rng = random.Random(f"{seed}/{group}")
            team = teams[group % len(teams)]  # balanced: every team in turn
            ex_teams = rng.sample([t for t in teams if t is not team], 2)
            settings = rng.sample(settings_pool, 3)
            setting = settings[2]
            values = {
                "team": team, "ex_teams": ex_teams, "settings": settings, "setting": setting,
                "probe_key": f"zk_{team['code'].lower()}__{setting['key']}",
                "examples": [{"team": t["name"], "code": t["code"], "name": s["key"],
                              "value": s["value"],
                              "key": f"zk_{t['code'].lower()}__{s['key']}"}
                             for t, s in zip(ex_teams, settings[:2], strict=True)],
                "rule_phrases": family["slots"]["rule_phrases"]["value"],
                "chatter": rng.sample(chatter_pool, 15),
            }
            instance = {
                "answer": {"distractors": {k: t.render(values) for k, t in distractors.items()},
                           "first": answer["first"], "scorer": answer["scorer"],
                           **{k: t.render(values) for k, t in texts.items()}},
                "axes": {}, "design": "main", "family": FAMILY,
                "family_version": family["version"], "fields": {}, "group": group,
                "id": f"{FAMILY}-{group:05d}-base", "paradigm": family["paradigm"],
                "phases": [{"messages": messages(t.render(values)), "phase": name}
                           for name, t in phases.items()],
                "variant": "base",
            }
            handle.write(json.dumps(instance, sort_keys=True, ensure_ascii=False) + "\n")


def measured(args: list[str]) -> tuple[float, float]:
    """(CPU seconds, peak RSS in MiB) of a fresh process tree running ``args``."""
    code = ("import resource, subprocess, sys;"
            "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL);"
            "u = resource.getrusage(resource.RUSAGE_CHILDREN);"
            "print(r.returncode, u.ru_utime + u.ru_stime, u.ru_maxrss)")
    environment = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    result = subprocess.run([sys.executable, "-c", code, *args], cwd=REPO, check=True,
                            capture_output=True, text=True, env=environment)
    status, cpu, rss = result.stdout.split()
    if status != "0":
        raise SystemExit(f"{' '.join(args)} failed")
    return float(cpu), int(rss) / 1024


def compare(groups: int, pairs: int) -> dict[str, Any]:
    """memspec generate and this script, ``groups`` groups each, in turns ``pairs`` times."""
    with tempfile.TemporaryDirectory(prefix="memspec-floor-") as name:
        tmp = Path(name)
        ours = [sys.executable, "-m", "memspec.cli", "generate", FAMILY, "--groups",
                str(groups), "--out", str(tmp / "memspec.jsonl")]
        theirs = [sys.executable, str(Path(__file__).resolve()), "--groups", str(groups),
                  "--out", str(tmp / "floor.jsonl")]
        measured(ours)  # the cache of compiled code filled, as after a first run
        runs = []
        for turn in range(pairs):
            first, second = (ours, theirs) if turn % 2 == 0 else (theirs, ours)
            a, b = measured(first), measured(second)
            runs.append((a, b) if first is ours else (b, a))
    ratios = sorted(f[0] / m[0] for m, f in runs)
    return {"family": FAMILY, "groups": groups, "pairs": pairs,
            "memspec_cpu_s": round(statistics.median(m[0] for m, _ in runs), 3),
            "script_cpu_s": round(statistics.median(f[0] for _, f in runs), 3),
            "memspec_peak_rss_mib": round(statistics.median(m[1] for m, _ in runs), 1),
            "script_peak_rss_mib": round(statistics.median(f[1] for _, f in runs), 1),
            "speedup": round(statistics.median(ratios), 3),
            "speedup_range": [round(ratios[0], 3), round(ratios[-1], 3)],
            "load_average": [round(x, 2) for x in os.getloadavg()],
            "target": ">= 1.3 (memspec's CPU at most 1/1.3 of the script's)"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--groups", type=int, default=20_000)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--compare", action="store_true")
    parser.add_argument("--pairs", type=int, default=7)
    parser.add_argument("--json", type=Path, default=REPO / "bench" / "results.json",
                        help="where --compare stores its result (key stock_jinja_floor)")
    args = parser.parse_args()
    if not args.compare:
        if args.out is None:
            parser.error("--out is needed to render")
        generate(args.groups, args.out)
        return
    result = compare(args.groups, args.pairs)
    print(f"{result['groups']} groups of {FAMILY}: memspec {result['memspec_cpu_s']} s CPU, "
          f"{result['memspec_peak_rss_mib']} MiB; the hand-written script "
          f"{result['script_cpu_s']} s, {result['script_peak_rss_mib']} MiB; memspec "
          f"{result['speedup']}x faster (pairs {result['speedup_range'][0]}-"
          f"{result['speedup_range'][1]}; target {result['target']}; load "
          f"{result['load_average']})")
    stored = json.loads(args.json.read_text(encoding="utf-8")) if args.json.is_file() else {}
    stored["stock_jinja_floor"] = result
    args.json.write_text(json.dumps(stored, indent=2, sort_keys=True) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
