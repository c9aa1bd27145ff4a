"""Where a finished run's results go, so that a reader can take them in: its section, as the
harness wrote it, into bench/history/<YYYY-MM>.md (one file per month, newest run first), its
figures (the section's tables, case by case) beside it as bench/history/figures/<run>.json, and
bench/RESULTS.md rendered again from the newest figures of each case: one short table per case
saying where duet stands. bench.py, replicas.py and workspace.py hand each run to record();
`python3 bench/results.py` renders the summary again. Standard library only, like bench.py.
"""

from __future__ import annotations

import json
import os
import re
from typing import Callable

# The cases of the summary, in its order, with the name each goes by there. A case the harness
# measures that is not listed here still shows, after these, under its first table's title.
CASE_NAMES = {
    "2026-json": "2026 tools/call, JSON replies",
    "2026-sse": "2026 tools/call, SSE replies",
    "2026-json-own-core": "2026 tools/call, JSON, load generator on its own core",
    "2025-session": "Handshake-era tools/call in a session",
    "2025-stateless": "Handshake-era tools/call, stateless",
    "tools-list": "tools/list of 200 tools",
    "sessions": "Idle handshake-era sessions (memory)",
    "stdio": "stdio",
    "growth": "RSS growth",
    "client": "Clients: duet's against rmcp's and the Python SDK's",
    "signals": "What the operating signals cost",
    "replicas": "Replicas (Redis backplane, nginx)",
    "workspace": "Workspace (duet serve --root) against the reference, ripgrep and fd",
}

# The last cell of a target's row when it is met (bench.py writes "met", workspace.py "yes").
MET = ("met", "yes")

SUMMARY_HEADER = """# duet benchmark results

Where duet stands: for each case the harness measures, the figures of the newest run that
measured it, duet's own rows (its peers' are in the run's section), the targets and whether each
is met. Absolute numbers drift with the shared machine; compare the ratios, which come from one
run with the servers interleaved. Runs limited to some servers (`--servers`) are experiments and
stay out of this summary.

Written by `bench/run.sh` (see bench/README.md) after each run, from the figures in
`history/figures/`; do not edit it by hand. Every run's full section, peers and notes included,
newest first, is in the history, one file a month: {months}. A run cited by its date
(`bench/RESULTS.md, 2026-12-02 15:46`, as older notes do) is in the file of its month.

"""

HISTORY_HEADER = """# duet benchmark runs, {month}

Every run of the month as `bench/run.sh` wrote it (and any reading added by hand), newest first.
Where duet stands now is summarised in [../RESULTS.md](../RESULTS.md); see bench/README.md.

"""


def history_dir(results: str) -> str:
    """The history beside the results file: bench/history/ for bench/RESULTS.md."""
    return os.path.join(os.path.dirname(os.path.abspath(results)), "history")


def figures_dir(results: str) -> str:
    """Where each run's figures are kept, one JSON file a run."""
    return os.path.join(history_dir(results), "figures")


def slug(heading: str) -> str:
    """The anchor GitHub gives a markdown heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def section_heading(section: str) -> str:
    """A section's `## ` heading line, without the hashes: "2026-12-03 12:44 — full run"."""
    first = section.lstrip().splitlines()[0]
    if not first.startswith("## "):
        raise ValueError(f"a run's section starts with a '## ' heading, not {first!r}")
    return first[3:].strip()


def run_date(section: str) -> str:
    """The date and time a section's heading starts with, "YYYY-MM-DD HH:MM"."""
    return section_heading(section)[:16]


def history_file(results: str, date: str) -> str:
    """The month's history file a run of `date` belongs in."""
    return os.path.join(history_dir(results), f"{date[:7]}.md")


def add_to_history(results: str, section: str) -> str:
    """Puts a section at the top of its month's history file (made with its header if new);
    returns the file's path."""
    path = history_file(results, run_date(section))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    old = ""
    if os.path.exists(path):
        with open(path) as f:
            old = f.read()
    cut = old.find("\n## ")
    head = old[:cut + 1] if cut >= 0 else (old or HISTORY_HEADER.format(month=run_date(section)[:7]))
    runs = old[cut + 1:] if cut >= 0 else ""
    with open(path, "w") as f:
        f.write(head + section.strip("\n") + "\n\n" + runs)
    return path


def parse_table(lines: list[str]) -> dict:
    """A markdown table's header cells, its alignment cells ("---", "---:") and its rows' cells."""
    cells = [[c.strip() for c in line.strip().strip("|").split("|")] for line in lines]
    return {"columns": cells[0], "align": cells[1], "rows": cells[2:]}


def parts_of(section: str) -> list[tuple[str | None, list[str]]]:
    """A section cut at its `### ` headings: (title, lines) for each part, the part before the
    first heading titled None."""
    parts: list[tuple[str | None, list[str]]] = [(None, [])]
    for line in section.strip("\n").splitlines()[1:]:
        if line.startswith("### "):
            parts.append((line[4:].strip(), []))
        else:
            parts[-1][1].append(line)
    return parts


def tables_in(lines: list[str]) -> list[dict]:
    """Every markdown table among some lines, in order."""
    tables, block = [], []
    for line in lines + [""]:
        if line.startswith("|"):
            block.append(line)
        elif block:
            tables.append(parse_table(block))
            block = []
    return tables


def images_in(lines: list[str]) -> list[str]:
    """The targets of the markdown images among some lines (the charts of a section)."""
    return [m.group(1) for line in lines for m in re.finditer(r"!\[[^\]]*\]\(([^)]+)\)", line)]


def prose_in(lines: list[str]) -> list[str]:
    """The lines of a part that are neither tables nor images nor blank."""
    return [line for line in lines if line.strip() and not line.startswith("|") and not line.startswith("![")]


def bullet(section: str, name: str) -> str | None:
    """The value of a section's `- Name: value` line, if it has one."""
    m = re.search(rf"^- {re.escape(name)}: (.*)$", section, re.MULTILINE)
    return m.group(1).strip() if m else None


def run_of(section: str, link: str) -> dict:
    """What the summary says of a run: its heading, date, commit, the servers it was limited to
    (None: all) and a link to its section."""
    duet = bullet(section, "duet") or ""
    commit = re.match(r"commit ([^,]+)", duet)
    servers = bullet(section, "Servers")
    return {"heading": section_heading(section), "date": run_date(section),
            "commit": commit.group(1) if commit else "?",
            "servers": servers, "section": link}


def figures_of(section: str, link: str, case_of: Callable[[str | None], str | None], charts_from: str,
               targets: dict[str, list[list[str]]] | None = None) -> dict:
    """A run's figures, from its section: for each case (case_of maps a part's title to its
    case, None to leave the part out) the tables, the prose of titled parts without a table, the
    targets (a table whose first column is "target", or `targets` given by case as rows of
    target, measured, goal, verdict) and the charts (their links made relative to the results
    file; charts_from is the section's links' directory relative to it)."""
    cases: dict[str, dict] = {}
    for title, lines in parts_of(section):
        case = case_of(title)
        if case is None:
            continue
        measured = cases.setdefault(case, {"title": title or CASE_NAMES.get(case, case), "tables": [],
                                           "text": [], "targets": None, "charts": []})
        found = tables_in(lines)
        for table in found:
            if table["columns"][0] == "target":
                measured["targets"] = table
            else:
                measured["tables"].append({"heading": title, **table})
        if title and not found and prose_in(lines):
            measured["text"].append(f"{title}: {' '.join(prose_in(lines))}")
        measured["charts"] += [os.path.normpath(os.path.join(charts_from, image)) for image in images_in(lines)]
    for case, rows in (targets or {}).items():
        if case in cases and rows:
            cases[case]["targets"] = {"columns": ["target", "measured", "goal", ""],
                                      "align": ["---", "---:", "---", "---"], "rows": rows}
    return {"run": run_of(section, link), "cases": cases}


def figures_name(run: dict) -> str:
    """A run's figures file name: its date and kind, "2026-12-03-1244-full-run.json"."""
    return slug(run["heading"].replace(":", "")).replace("--", "-") + ".json"


def write_figures(results: str, figures: dict) -> str:
    """Keeps a run's figures in history/figures/; returns the file's path."""
    path = os.path.join(figures_dir(results), figures_name(figures["run"]))
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        json.dump(figures, f, indent=1, ensure_ascii=False)
        f.write("\n")
    return path


def newest_by_case(results: str) -> dict[str, tuple[dict, dict]]:
    """{case: (run, the case's figures)} from the newest run that measured each case with all
    its servers."""
    newest: dict[str, tuple[dict, dict]] = {}
    where = figures_dir(results)
    names = sorted(os.listdir(where)) if os.path.isdir(where) else []
    for name in names:
        with open(os.path.join(where, name)) as f:
            figures = json.load(f)
        run = figures["run"]
        if run["servers"]:
            continue
        for case, data in figures["cases"].items():
            if case not in newest or newest[case][0]["date"] <= run["date"]:
                newest[case] = (run, data)
    return newest


def duets_rows(table: dict) -> list[list[str]]:
    """The rows of a table the summary shows: duet's own (a server column's rows that name duet
    first), or every row of a table without such rows."""
    if table["columns"][0] != "server":
        return table["rows"]
    own = [row for row in table["rows"] if row[0].startswith("duet")]
    return own or table["rows"]


def markdown_table(table: dict, rows: list[list[str]]) -> list[str]:
    """A table's markdown lines with the given rows."""
    return ["| " + " | ".join(table["columns"]) + " |", "|" + "|".join(table["align"]) + "|",
            *("| " + " | ".join(row) + " |" for row in rows)]


def targets_met(data: dict) -> str:
    """How many of a case's targets its run met, "3 of 5 met", or "none evaluated"."""
    rows = data["targets"]["rows"] if data["targets"] else []
    if not rows:
        return "none evaluated"
    return f"{sum(row[-1] in MET for row in rows)} of {len(rows)} met"


def ordered(newest: dict) -> list[str]:
    """The cases in the summary's order: CASE_NAMES's, then any other by name."""
    return [c for c in CASE_NAMES if c in newest] + sorted(c for c in newest if c not in CASE_NAMES)


def case_name(case: str, data: dict) -> str:
    """The name a case goes by in the summary."""
    return CASE_NAMES.get(case, data["title"])


def run_link(run: dict) -> str:
    """A link to a run's section, with its commit."""
    return f"[{run['heading']}]({run['section']}) (commit {run['commit']})"


def overview(newest: dict) -> list[str]:
    """The summary's first table: one row per case, its run, its targets met and its charts."""
    rows = []
    for case in ordered(newest):
        run, data = newest[case]
        name = case_name(case, data)
        charts = ", ".join(f"[svg]({c})" for c in data["charts"]) or "—"
        rows.append([f"[{name}](#{slug(name)})", f"[{run['date']}]({run['section']})", targets_met(data), charts])
    return markdown_table({"columns": ["case", "newest run", "targets", "chart"], "align": ["---"] * 4}, rows)


def case_summary(case: str, run: dict, data: dict) -> list[str]:
    """A case's part of the summary: its run and charts, duet's rows and its targets."""
    charts = "".join(f"; chart: [{os.path.basename(c)}]({c})" for c in data["charts"])
    lines = [f"## {case_name(case, data)}", "", f"From {run_link(run)}{charts}.", ""]
    for table in data["tables"]:
        if len(data["tables"]) > 1 and table["heading"]:
            lines += [f"{table['heading']}:", ""]
        lines += markdown_table(table, duets_rows(table)) + [""]
    lines += [*data["text"], ""] if data["text"] else []
    if data["targets"]:
        lines += markdown_table(data["targets"], data["targets"]["rows"]) + [""]
    return lines


def history_months(results: str) -> list[str]:
    """The history's month files, "2026-12.md", newest first."""
    where = history_dir(results)
    return sorted((m for m in os.listdir(where) if m.endswith(".md")), reverse=True) if os.path.isdir(where) else []


def summary(results: str) -> str:
    """The results file's text: the overview, then each case's summary."""
    newest = newest_by_case(results)
    listed = ", ".join(f"[{m[:-3]}](history/{m})" for m in history_months(results)) or "none yet"
    lines = [SUMMARY_HEADER.format(months=listed).rstrip("\n"), ""]
    lines += overview(newest) + [""]
    for case in ordered(newest):
        lines += case_summary(case, *newest[case])
    return "\n".join(lines).rstrip("\n") + "\n"


def record(results: str, section: str, case_of: Callable[[str | None], str | None],
           targets: dict[str, list[list[str]]] | None = None) -> None:
    """Files a finished run: its section into the history, its figures beside it, and the
    summary in `results` brought up to date for the cases it measured. The section's chart
    links are relative to the history directory."""
    path = add_to_history(results, section)
    link = f"{os.path.relpath(path, os.path.dirname(os.path.abspath(results)))}#{slug(section_heading(section))}"
    charts_from = os.path.relpath(history_dir(results), os.path.dirname(os.path.abspath(results)))
    write_figures(results, figures_of(section, link, case_of, charts_from, targets))
    with open(results, "w") as f:
        f.write(summary(results))


def main() -> int:
    """`python3 bench/results.py`: renders bench/RESULTS.md again from the figures in
    bench/history/figures/ (after a figures file was mended by hand, for instance)."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "RESULTS.md")
    with open(path, "w") as f:
        f.write(summary(path))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
