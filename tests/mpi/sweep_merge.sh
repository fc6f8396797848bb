#!/usr/bin/env bash
# The MPI sweep (2 ranks, points round-robin, merged at rank 0) writes the same bytes as one process, for CSV
# and JSON. Usage: sweep_merge.sh STAGECRAFT_MPI STAGECRAFT SOURCE_DIR
set -euo pipefail
mpi_cli="$1"; cli="$2"; cd "$3"
tmp="$(mktemp -d)"; trap 'rm -rf "$tmp"' EXIT
args=(sweep --model presets/models/llama3-8b.json --model presets/models/mixtral-8x7b.json --system dgx-h100-superpod
      --gpus 32 --batch 64 --tp 1,2,4 --pp 1,2 --cp 1,2 --zero 1,3 --threads 1
      --axis flops=1,2 --axis topology=two_tier,fullflat --axis inr=on,off)
mpirun --allow-run-as-root --oversubscribe -np 2 "$mpi_cli" "${args[@]}" --csv "$tmp/mpi.csv" 2>"$tmp/mpi.err"
"$cli" "${args[@]}" --csv "$tmp/one.csv" 2>/dev/null
mpirun --allow-run-as-root --oversubscribe -np 2 "$mpi_cli" "${args[@]}" --json >"$tmp/mpi.json" 2>/dev/null
"$cli" "${args[@]}" --json >"$tmp/one.json" 2>/dev/null
[ "$(wc -l <"$tmp/one.csv")" -eq 17 ] || { echo "expected 1 + 8 points x 2 models lines"; cat "$tmp/one.csv"; exit 1; }
cmp "$tmp/mpi.csv" "$tmp/one.csv" || { echo "CSV differs"; diff "$tmp/mpi.csv" "$tmp/one.csv" | head; exit 1; }
cmp "$tmp/mpi.json" "$tmp/one.json" || { echo "JSON differs"; exit 1; }
grep -q "on 2 processes" "$tmp/mpi.err" || { echo "not run on 2 ranks:"; cat "$tmp/mpi.err"; exit 1; }
# Other commands are refused on several ranks, with one clear message.
if mpirun --allow-run-as-root --oversubscribe -np 2 "$mpi_cli" search --model x 2>"$tmp/refused.err"; then
  echo "search ran on 2 ranks"; exit 1
fi
grep -q "only \`sweep\` is distributed" "$tmp/refused.err" || { cat "$tmp/refused.err"; exit 1; }
echo "mpi sweep: 2 ranks == 1 process (CSV and JSON)"
