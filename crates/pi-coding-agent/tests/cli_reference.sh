#!/usr/bin/env bash
# Records how the reference Pi 1.6.0 reacts to many argument vectors, as the fixture
# tests/fixtures/cli_errors.jsonl, read by the unit tests in src/cli/fixture_tests.rs.
#
# Each record: {"scope", "args", "exit", "stderr", "stdout", "help"}
#   scope  "args": in this empty environment (no settings, models or extensions) Pi's outcome
#          depends only on the arguments; parse_cli plus Invocation::startup_diagnostics(&[])
#          must match it exactly (apart from runtime warnings such as "No models available").
#          "runtime": Pi's outcome also depends on files or the model registry; our parser must
#          accept the arguments (the error, if any, comes later).
#   stderr stderr's lines (colourless: stderr is a file), without the help text when it went
#          there; the case directory is written <dir>, the package directory <pkg>.
#   stdout the first line of stdout.
#   help   whether the help text was printed (on stdout or stderr).
#
# Usage: tests/cli_reference.sh [PI_BIN] [NODE_BIN_DIR]   (needs Node 22; CI only reads the fixture)
# Every run is offline, in a fresh temporary HOME/agent dir/cwd, with stdin from /dev/null so
# `--mode rpc` exits at end of input; each process is killed by PID if it outlives the timeout.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
pi_bin="${1:-/work/ref/pi16/node_modules/.bin/pi}"
node_dir="${2:-/work/ref/node22/package/bin}"
out="$here/fixtures/cli_errors.jsonl"
timeout_s=30
pkg_dir="$(cd "$(dirname "$(readlink -f "$pi_bin")")/../.." && pwd)"

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
: >"$work/records.jsonl"

# run SCOPE ARGS... : runs the reference once and appends a record.
run() {
    local scope="$1"
    shift
    local dir="$work/case"
    rm -rf "$dir"
    mkdir -p "$dir/home" "$dir/agent" "$dir/cwd"
    (
        cd "$dir/cwd"
        exec env -i PATH="$node_dir:/usr/bin:/bin" HOME="$dir/home" \
            PI_CODING_AGENT_DIR="$dir/agent" PI_OFFLINE=1 \
            "$pi_bin" "$@" </dev/null >"$dir/stdout" 2>"$dir/stderr"
    ) &
    local pid=$! waited=0 code
    while kill -0 "$pid" 2>/dev/null && [ "$waited" -lt $((timeout_s * 10)) ]; do
        sleep 0.1
        waited=$((waited + 1))
    done
    if kill -0 "$pid" 2>/dev/null; then
        kill "$pid" 2>/dev/null || true
        echo "timeout: $*" >&2
    fi
    code=0
    wait "$pid" || code=$?
    "$node_dir/node" -e '
        const fs = require("fs");
        const path = require("path");
        const [scope, dir, code, pkg, ...args] = process.argv.slice(1);
        const norm = (text) => text.split(pkg).join("<pkg>").split(dir).join("<dir>");
        const stdout = norm(fs.readFileSync(dir + "/stdout", "utf8"));
        let stderr = norm(fs.readFileSync(dir + "/stderr", "utf8"));
        const helpMark = "pi - AI coding assistant with";
        const help = (stdout + stderr).includes(helpMark);
        const helpAt = stderr.indexOf(helpMark);
        if (helpAt !== -1) stderr = stderr.slice(0, helpAt);
        const rec = {
            scope,
            args,
            exit: Number(code),
            stderr: stderr.split("\n").filter((l) => l !== ""),
            stdout: stdout.split("\n")[0],
            help,
        };
        fs.appendFileSync(dir + "/../records.jsonl", JSON.stringify(rec) + "\n");
    ' "$scope" "$dir" "$code" "$pkg_dir" "$@"
}

R=(--mode rpc)

# --mode
run args "${R[@]}" --mode
run args "${R[@]}" --mode -c
run args --mode bogus
run args --mode ""
run args --mode RPC
run args --mode json --mode rpc
run args "${R[@]}" --mode json --mode
run args "${R[@]}" --mode text --mode rpc

# unknown short options, short value flags at the end
run args "${R[@]}" -x
run args "${R[@]}" -
run args "${R[@]}" -x -y
run args "${R[@]}" -pp -nx -ab
run args "${R[@]}" -t
run args "${R[@]}" -e
run args "${R[@]}" -xt
run args "${R[@]}" -x message

# --name
run args "${R[@]}" -n
run args "${R[@]}" --name
run args "${R[@]}" --name "   "
run args "${R[@]}" --name ""
run args "${R[@]}" -n "My session"
run args "${R[@]}" -n -c
run args --help --name " "

# --tools and friends
run args "${R[@]}" --tools read,+bash
run args "${R[@]}" -t "+a,-b*"
run args "${R[@]}" -t "+codemode,-write"
run args "${R[@]}" --tools "read, grep,,find"
run args "${R[@]}" --tools ""
run args "${R[@]}" --tools read,+bash --tools read
run args "${R[@]}" --tools x -t "-y,z"
run args "${R[@]}" --exclude-tools "mcp__*" -xt a,b
run args "${R[@]}" --models " a , b ,," --models ","
run args "${R[@]}" -nt -nbt -ne -ns -np -nc -na -a --no-mcp --no-themes --verbose --no-session

# --thinking
run args "${R[@]}" --thinking bad
run args "${R[@]}" --thinking HIGH
run args "${R[@]}" --thinking ""
run args "${R[@]}" --thinking max
run args "${R[@]}" --thinking bad -x
run args "${R[@]}" -x --thinking bad --mode
run args "${R[@]}" --thinking bad --thinking worse
run args "${R[@]}" --thinking

# --use-theme, --tui-mode
run args "${R[@]}" --use-theme
run args "${R[@]}" --use-theme -c
run args "${R[@]}" --use-theme dark
run args "${R[@]}" --tui-mode
run args "${R[@]}" --tui-mode -r
run args "${R[@]}" --tui-mode weird
run args "${R[@]}" --tui-mode regular
run args "${R[@]}" --tui-mode fullscreen

# value flags at the end become extension flags; unknown long flags are kept
run args "${R[@]}" --model
run args "${R[@]}" --provider
run args "${R[@]}" --export
run args "${R[@]}" --session-id
run args "${R[@]}" --fork
run args "${R[@]}" --foo --bar=1 baz --qux value
run args "${R[@]}" ---x
run args "${R[@]}" --=v
run args "${R[@]}" --model=x
run args "${R[@]}" --offline
run args "${R[@]}" -- --offline -x
run args "${R[@]}" --foo
run args "${R[@]}" --a --b=2 --a=3
run args "${R[@]}" --foo --provider p
run args "${R[@]}" --thinking x --foo -x
run args --help --foo
run args --list-models --foo=1
run args "${R[@]}" --help=1
run args "${R[@]}" -ne --plan

# @file in RPC mode
run args "${R[@]}" @missing.txt
run args "${R[@]}" -- @missing.txt
run args @a --mode rpc --fork x -c
run args --help --mode rpc @f
run args "${R[@]}" @

# --fork / --session-id
run args "${R[@]}" --fork x --session y --continue --resume --no-session
run args "${R[@]}" --fork x -c
run args "${R[@]}" --fork x --no-session
run args "${R[@]}" --fork x -r
run args "${R[@]}" --fork "" -c
run runtime "${R[@]}" --fork x --session ""
run args --help --fork a --no-session
run args "${R[@]}" --session-id abc --session s -c -r
run args "${R[@]}" --session-id abc -r
run args "${R[@]}" --session-id abc --no-session
run args "${R[@]}" --session-id "a-"
run args "${R[@]}" --session-id ""
run args "${R[@]}" --session-id "-x" -c
run args "${R[@]}" --session-id "a b"
run args "${R[@]}" --session-id "é"
run args "${R[@]}" --session-id bad. --fork x -c
run args "${R[@]}" --session-id "bad id" --name " "
run args "${R[@]}" --name " " --provider p

# --provider without --model
run args "${R[@]}" --provider openai
run args "${R[@]}" --provider openai --model ""
run args "${R[@]}" --provider ""
run args --help --provider openai
run args --list-models --provider x
run args --list-models gpt --provider x
run args "${R[@]}" --thinking bad --provider p

# actions and their precedence
run args -v
run args --version
run args -h
run args --help --version
run args --version --thinking bad
run args --version --mode rpc @f --fork a -c -n ""
run args --help --mode text
run args --list-models
run args --list-models sonnet
run args "${R[@]}" --list-models
run args "${R[@]}" -p hello
run args "${R[@]}" --print
run args "${R[@]}" --export ""
run args "${R[@]}" --models "" --tools ""
run args "${R[@]}" -c
run args "${R[@]}" --session-id a.b_c-d
run args "${R[@]}" hello world

# outcomes that need files or the model registry
run runtime --help --export missing.jsonl
run runtime --export missing.jsonl out.html
run runtime "${R[@]}" --api-key k
run runtime "${R[@]}" --provider p --api-key k
run runtime "${R[@]}" --session nonexistent
run runtime "${R[@]}" --fork nonexistent
run runtime "${R[@]}" --session-id abc --fork nonexistent
run runtime "${R[@]}" --model nosuchmodel
run runtime "${R[@]}" --models nosuchmodel
run runtime auth
run runtime list --bogus
run runtime install

mkdir -p "$(dirname "$out")"
cp "$work/records.jsonl" "$out"
echo "wrote $(wc -l <"$out") records to $out" >&2
