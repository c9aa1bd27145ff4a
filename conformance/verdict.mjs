// Counts the checks a `conformance server` run wrote (every checks.json under the output
// directory given) by status and prints them on one line. After the directory,
// `--except NAME...` leaves out the runs of those scenarios and `--only NAME...` counts
// theirs alone; `--known FILE` (before either) names checks no conforming implementation
// can pass, each with its scenario, check name, status and why: those are counted apart as
// known. Exits 1 when any other counted check failed, warned or was skipped, or when none
// was counted: INFO checks are informational, everything else must be a SUCCESS.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";

const args = process.argv.slice(2);
const root = args.shift();
const known = args[0] === "--known" ? (args.shift(), JSON.parse(readFileSync(args.shift(), "utf8"))) : [];
const [mode, ...names] = args;
const isKnown = (scenario, check) =>
  known.some((k) => k.scenario === scenario && k.check === check.name && k.status === check.status);
// A run's directory is `server-<scenario>-<timestamp>` (a client run's `<scenario>-<timestamp>`).
const scenarioOf = (dir) => basename(dir).replace(/^server-/, "").replace(/-\d{4}-\d{2}-\d{2}T.*$/, "");
const counted = (scenario) =>
  mode === "--only" ? names.includes(scenario) : !(mode === "--except" && names.includes(scenario));

const counts = {};
const walk = (dir) => {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (name === "checks.json" && counted(scenarioOf(dirname(path)))) {
      const scenario = scenarioOf(dirname(path));
      for (const check of JSON.parse(readFileSync(path, "utf8"))) {
        const status = isKnown(scenario, check) ? "KNOWN" : check.status;
        counts[status] = (counts[status] ?? 0) + 1;
      }
    }
  }
};
walk(root);
const bad = ["FAILURE", "WARNING", "SKIPPED"].reduce((n, s) => n + (counts[s] ?? 0), 0);
const shown = Object.entries(counts).map(([status, n]) => `${n} ${status.toLowerCase()}`).join(", ");
console.log(shown || "no checks ran");
process.exit(bad === 0 && (counts.SUCCESS ?? 0) > 0 ? 0 : 1);
