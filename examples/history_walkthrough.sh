#!/usr/bin/env bash
# Issue 15's walk-through, end to end: runs of examples/serialization.py recorded across
# commits of a throw-away git repository, then the run list, a trend with its change
# point and chart, a comparison with the previous run from history, and the HTML report.
#
#   bash examples/history_walkthrough.sh [FOLDER]     (FOLDER: kept for a look; default a temp dir)
#
# Three runs at the first commit, then a commit that makes json slower (indent=1: a larger
# payload to write), then three more runs: `perflab history` should find that step in the
# northwind/json[serialize] trend, between the two commits, and none in marshal's and
# orjson's (unchanged). To keep it to a few minutes on 2 cores, the runs measure json,
# orjson and marshal only (--filter) with --budget 3s, 5-8 processes each; on a machine so
# busy that one run's medians differ from the next by more than the step, no change point
# is the honest answer.
# PERFLAB (default: perflab) is the command to run, e.g. PERFLAB=".venv/bin/python -m perflab".
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
perflab=${PERFLAB:-perflab}
work=${1:-$(mktemp -d)}
mkdir -p "$work"
cd "$work"
echo "# working in $work"

step() { echo; echo "\$ perflab $*"; $perflab "$@"; }

git init -q -b main .
git config user.email walkthrough@example.invalid
git config user.name walkthrough
cp "$here/serialization.py" "$here/northwind.py" .
mkdir -p data && cp "$here/data/northwind.sql" data/
git add serialization.py northwind.py data
git commit -q -m "serialization benchmarks"

run=(run serialization.py --filter json --filter marshal --budget 3s --precision 5%
     --min-processes 5 --max-processes 8 --quiet)
for i in 1 2 3; do step "${run[@]}" --json "run-$i.json" --tag walkthrough; done

# the change under test: json output indented (a larger payload, slower both ways)
sed -i 's/_register("json", json.dumps, json.loads)/_register("json", lambda d: json.dumps(d, indent=1), json.loads)/' serialization.py
git commit -q -am "json: indent the output"

for i in 4 5 6; do step "${run[@]}" --json "run-$i.json" --tag walkthrough; done

step history
step history 'northwind/*' --limit 8 --chart trend.png
step compare --to last
step report --history -o report.html
ls -l trend.png report.html
