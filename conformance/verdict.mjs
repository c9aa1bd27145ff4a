// Counts the checks a `conformance server` run wrote (every checks.json under the output
// directory given) by status and prints them on one line. After the directory,
// `--except NAME...` leaves out the runs of those scenarios and `--only NAME...` counts
// theirs alone. Exits 1 when any counted check failed, warned or was skipped, or when none
// was counted: INFO checks are informational, everything else must be a SUCCESS.
import { readdirSync, readFileSync, statSync } from "node:fs";
import { basename, dirname, join } from "node:path";

const [root, mode, ...names] = process.argv.slice(2);
// A run's directory is `server-<scenario>-<timestamp>`.
const scenarioOf = (dir) => basename(dir).replace(/^server-/, "").replace(/-\d{4}-\d{2}-\d{2}T.*$/, "");
const counted = (scenario) =>
  mode === "--only" ? names.includes(scenario) : !(mode === "--except" && names.includes(scenario));

const counts = {};
const walk = (dir) => {
  for (const name of readdirSync(dir)) {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) walk(path);
    else if (name === "checks.json" && counted(scenarioOf(dirname(path)))) {
      for (const check of JSON.parse(readFileSync(path, "utf8"))) {
        counts[check.status] = (counts[check.status] ?? 0) + 1;
      }
    }
  }
};
walk(root);
const bad = ["FAILURE", "WARNING", "SKIPPED"].reduce((n, s) => n + (counts[s] ?? 0), 0);
const shown = Object.entries(counts).map(([status, n]) => `${n} ${status.toLowerCase()}`).join(", ");
console.log(shown || "no checks ran");
process.exit(bad === 0 && (counts.SUCCESS ?? 0) > 0 ? 0 : 1);
