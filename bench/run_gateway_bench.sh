#!/usr/bin/env bash
# End-to-end benchmark: chunkbridge serve next to the Node AI SDK reference gateway and the
# unparsed Python passthrough, in one run of the shared harness (../shared/bench/run.sh):
# S1 one stream as fast as possible, S2 100 streams at 50 events/s, S3 1000 streams at
# 20 events/s, S4 tool-heavy. Everything on 127.0.0.1, every load bounded (see its README).
#
#   bench/run_gateway_bench.sh                 # ROUNDS=3 by default; any run.sh knob works
#   SCENARIOS="S1 S2" ROUNDS=2 bench/run_gateway_bench.sh
#   bench/run_gateway_bench.sh provider        # P1-P4: model-provider streams over HTTP
#   CHUNKBRIDGE_FLAGS="--resume memory" SCENARIOS="S2 S3" bench/run_gateway_bench.sh
#
# The shared harness is read-only here, so it runs from a scratch copy; the results (every
# load.py JSON report, table.md, summary.json, logs) are copied to bench/results/<timestamp>/.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
SHARED=${SHARED_BENCH:-$ROOT/../shared/bench}
[ -x "$ROOT/.venv/bin/chunkbridge" ] || { echo "run 'make install' first" >&2; exit 1; }
[ -f "$SHARED/run.sh" ] || { echo "no benchmark harness at $SHARED" >&2; exit 1; }

WORK=${BENCH_WORKDIR:-/tmp/chunkbridge-bench}
mkdir -p "$WORK"
# keep .venv / node_modules of earlier runs, refresh the harness itself
rsync -a --exclude .venv --exclude node_modules --exclude results "$SHARED/" "$WORK/" 2>/dev/null \
  || cp -r "$SHARED/." "$WORK/"
chmod -R u+w "$WORK"

export ROUNDS=${ROUNDS:-3}
export GATEWAY_NAME=chunkbridge
export GATEWAY_CMD="exec '$ROOT/.venv/bin/chunkbridge' serve --dialect agent-ops-v2 \
--upstream \"\$UPSTREAM/sessions/{session_id}/ws\" --host 127.0.0.1 --port \$PORT \
${CHUNKBRIDGE_FLAGS:-}"
# P scenarios: an HTTP model provider; PROVIDER says which API it speaks.
export GATEWAY_CMD_HTTP="exec '$ROOT/.venv/bin/chunkbridge' serve --dialect \
\$( [ \"\$PROVIDER\" = anthropic ] && echo anthropic-messages || echo openai-chat ) \
--upstream \"\$UPSTREAM_HTTP\" --host 127.0.0.1 --port \$PORT"
(cd "$WORK" && ./run.sh "$@")

latest=$(ls -1d "$WORK"/results/*/ | sort | tail -1)
dest="$ROOT/bench/results/$(basename "$latest")"
mkdir -p "$dest"
cp -r "$latest"/. "$dest"/
echo
echo "results copied to $dest"
cat "$dest/table.md"
