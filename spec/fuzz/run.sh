#!/usr/bin/env bash
# Runs the libFuzzer harnesses built by `make fuzz-build` (mk/fuzz.mk).
# Usage: spec/fuzz/run.sh long|short SECONDS target...
#   long   fuzzes each target for SECONDS on spec/fuzz/corpus/<target>,
#          keeping new inputs in build/fuzz/corpus/<target>; with
#          FUZZ_MERGE=1 they are merged into spec/fuzz/corpus/<target>.
#   short  replays spec/fuzz/regressions/<target>/*, then fuzzes each target
#          for SECONDS with a throw-away corpus (make test).
# Prints one summary line per target; a crash, leak or timeout fails the
# run and names the input libFuzzer saved (build/fuzz/crashes/<target>/).
set -uo pipefail
cd "$(dirname "$0")/../.."
mode=$1 secs=$2
shift 2
out=build/fuzz
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
mkdir -p "$out/logs"
failed=0

count() { find "$1" -maxdepth 1 -type f 2>/dev/null | wc -l; }

# The lines of a failed run worth showing: the sanitizer's report and
# libFuzzer's note of the saved input.
report() {
  grep -E 'ERROR: |SUMMARY: |runtime error|^    #[0-9] |Test unit written|ALARM|timeout' "$1" | head -n 30 | sed 's/^/    /'
}

for t in "$@"; do
  bin=$out/fuzz_$t seeds=spec/fuzz/corpus/$t dict=spec/fuzz/$t.dict
  crashes=$out/crashes/$t
  log=$out/logs/$t.log
  mkdir -p "$crashes" "$seeds"
  : >"$log"
  extra=(-timeout=25 -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$crashes/")
  [ -f "$dict" ] && extra+=(-dict="$dict")
  if [ "$mode" = short ]; then
    regs=(spec/fuzz/regressions/$t/*)
    if [ -e "${regs[0]}" ]; then
      if ! "$bin" "${extra[@]}" "${regs[@]}" >>"$log" 2>&1; then
        echo "fuzz $t: FAILED replaying spec/fuzz/regressions/$t (log: $log)"
        report "$log"
        failed=1
        continue
      fi
    fi
    corpus=$out/short/$t
    rm -rf "$corpus"
  else
    corpus=$out/corpus/$t
  fi
  mkdir -p "$corpus"
  before=$(count "$corpus")
  start=$SECONDS
  "$bin" "${extra[@]}" -max_total_time="$secs" "$corpus" "$seeds" >>"$log" 2>&1
  rc=$?
  took=$((SECONDS - start))
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
  if [ $rc -ne 0 ]; then
    saved=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)
    echo "fuzz $t: FAILED after ${took} s (exit $rc), input ${saved:-(none saved)} (log: $log)"
    report "$log"
    failed=1
    continue
  fi
  if [ "$mode" = long ] && [ "${FUZZ_MERGE:-0}" = 1 ]; then
    "$bin" -merge=1 "$seeds" "$corpus" >>"$log" 2>&1 || {
      echo "fuzz $t: merge into $seeds failed (log: $log)"
      failed=1
    }
  fi
  nregs=$(count "spec/fuzz/regressions/$t")
  echo "fuzz $t: ok, ${execs:-?} execs in ${took} s, corpus $(($(count "$corpus") + $(count "$seeds"))) inputs" \
    "($(($(count "$corpus") - before)) new, $(count "$seeds") in $seeds), $nregs regression inputs"
done
exit $failed
