#!/usr/bin/env bash
# Records `pi mcp ...` of the reference Pi 1.6.0 as tests/fixtures/mcp_cli.jsonl, replayed
# against our binary by tests/mcp_cli.rs. The steps share one agent dir and cwd, in order.
#
# Each record: {"args", "exit", "stdout", "stderr", "mcp_json"} where mcp_json is the agent
# dir's mcp.json after the step (or null); the temp dir is written <T> and the test MCP server
# <S>.
#
# Usage: tests/mcp_cli_reference.sh [PI_BIN] [NODE_BIN_DIR]   (needs Node 22; CI only reads the fixture)
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
pi_bin="${1:-$repo/conformance/.reference/pi16/node_modules/.bin/pi}"
node_dir="${2:-$repo/conformance/.reference/node22/package/bin}"
out="$here/fixtures/mcp_cli.jsonl"
(cd "$repo" && cargo build -q -p pi-test-support --bin mcp-test-server)
server="$repo/target/debug/mcp-test-server"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/home" "$work/agent" "$work/work"
: >"$work/records.jsonl"

step() {
    local code=0
    (cd "$work/work" && env -i PATH="$node_dir:/usr/bin:/bin" HOME="$work/home" \
        PI_CODING_AGENT_DIR="$work/agent" PI_OFFLINE=1 \
        timeout 30 "$pi_bin" mcp "$@" >"$work/out" 2>"$work/err" </dev/null) || code=$?
    python3 - "$work" "$server" "$code" "$@" >>"$work/records.jsonl" <<'PY'
import json, os, sys
work, server, code, args = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4:]
def norm(s): return s.replace(server, "<S>").replace(work, "<T>")
path = os.path.join(work, "agent", "mcp.json")
mcp = norm(open(path).read()) if os.path.exists(path) else None
print(json.dumps({"args": [norm(a) for a in args], "exit": code,
    "stdout": norm(open(os.path.join(work, "out")).read()),
    "stderr": norm(open(os.path.join(work, "err")).read()), "mcp_json": mcp}))
PY
}

step
step list
step add test -- "$server" --instructions "Test tools"
step add test --exposure deferred --description "Echo and sums" -- "$server"
step add web --url http://127.0.0.1:9/mcp --header X-Team=core --bearer-token-env-var WEB_TOKEN
step add oauthy --url http://127.0.0.1:9/mcp --oauth-client-id pi-test --oauth-callback-port 8765
step add bad --exposure nope -- x
step add envy --env NOEQUALS -- x
step add conf --header A=1 -- x
step add -l proj -- x
step add dead -- /nonexistent/server
step remove oauthy
step list
step list --json
step remove web
step remove proj
step remove web
step logout missing
step logout tset
step login test
step frob
step list extra
step remove dead
step list

cp "$work/records.jsonl" "$out"
echo "wrote $(wc -l <"$out") records to $out"
