#!/bin/bash
# SIGKILL a streamed, checkpointed run (2e6 steps, a checkpoint per 4096-step chunk) at a random
# time, resume it, repeat N times; the first resumed file is compared with an uninterrupted run.
# Usage: bash benchmarks/stream_sigkill/kill.sh N WORKDIR
here=$(cd "$(dirname "$0")" && pwd); n=${1:-25}; work=${2:-/tmp/stream-sigkill}
ok=0; bad=0; early=0
for i in $(seq 1 "$n"); do
  d=$work/d$i; rm -rf "$d"; mkdir -p "$d"
  python "$here/run.py" "$d" start > /dev/null 2>&1 & pid=$!
  sleep "$(python -c 'import random; print(4.0 + random.random() * 18)')"; kill -9 $pid; wait $pid 2>/dev/null
  if [ ! -e "$d/ck.npz" ]; then early=$((early+1)); continue; fi      # killed before any checkpoint
  if python "$here/run.py" "$d" resume > "$d/resume.log" 2>&1; then ok=$((ok+1)); else bad=$((bad+1)); tail -1 "$d/resume.log"; fi
  [ "$i" -eq 1 ] && python "$here/run.py" "$d" check
  rm -f "$d/r.h5"
done
echo "resumed=$ok failed_to_resume=$bad killed_before_first_checkpoint=$early"
