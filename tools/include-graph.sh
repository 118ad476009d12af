#!/usr/bin/env bash
# include-graph.sh -- prints the `#include "..."` graph of the C files of one
# folder and exits 1 when it has a cycle.
#
#   tools/include-graph.sh [-q] [DIR]      (DIR defaults to csrc/lua)
#
# Units, not files: a.c and a.h count as one unit "a", so a.c including b.h
# while b.c includes a.h is a cycle. Only quoted includes naming a file of
# DIR are edges (system headers and other folders' headers are left out).
# Output: one line per unit, "unit -> dep dep ...", sorted; then either
# "no cycle" or, for each strongly connected component of more than one
# unit (or a unit including itself), "cycle: a b c" naming its units.
# -q prints only the verdict.
# Exit status: 0 no cycle, 1 a cycle, 2 usage error.
set -euo pipefail

quiet=0
if [[ ${1:-} == -q ]]; then
  quiet=1
  shift
fi
dir=${1:-csrc/lua}
if [[ ! -d $dir ]]; then
  echo "include-graph.sh: no folder $dir" >&2
  exit 2
fi

shopt -s nullglob
files=("$dir"/*.c "$dir"/*.h)
if ((${#files[@]} == 0)); then
  echo "include-graph.sh: no .c or .h file in $dir" >&2
  exit 2
fi

# "from to" pairs of units, from every #include "x.h" naming a file of dir.
edges=$(
  for f in "${files[@]}"; do
    base=${f##*/}
    awk -v from="${base%.*}" -v dir="$dir" '
      /^[ \t]*#[ \t]*include[ \t]*"/ {
        s = $0
        sub(/^[^"]*"/, "", s)
        sub(/".*$/, "", s)
        if (s ~ /\//) next
        if ((getline line < (dir "/" s)) < 0) next
        close(dir "/" s)
        to = s
        sub(/\.[^.]*$/, "", to)
        if (to != from) print from, to
      }' "$f"
  done | sort -u
)

# Every unit, also those without edges.
units=$(for f in "${files[@]}"; do b=${f##*/}; echo "${b%.*}"; done | sort -u)

printf '%s\n' "$units" | awk -v quiet="$quiet" -v edges="$edges" '
  { unit[++n] = $1 }
  END {
    m = split(edges, lines, "\n")
    for (i = 1; i <= m; i++) {
      if (lines[i] == "") continue
      split(lines[i], p, " ")
      adj[p[1]] = adj[p[1]] " " p[2]
    }
    if (!quiet)
      for (i = 1; i <= n; i++) printf "%s ->%s\n", unit[i], (unit[i] in adj) ? adj[unit[i]] : ""
    # Tarjan strongly connected components, iterative over a call stack.
    idx = 0; sp = 0; cycles = 0
    for (i = 1; i <= n; i++) {
      if (unit[i] in index_of) continue
      cs = 1; cnode[1] = unit[i]; cpos[1] = 0
      index_of[unit[i]] = low[unit[i]] = ++idx; stk[++sp] = unit[i]; on[unit[i]] = 1
      while (cs > 0) {
        v = cnode[cs]
        k = split(adj[v], succ, " ")
        if (cpos[cs] < k) {
          w = succ[++cpos[cs]]
          if (!(w in index_of)) {
            index_of[w] = low[w] = ++idx; stk[++sp] = w; on[w] = 1
            cnode[++cs] = w; cpos[cs] = 0
          } else if (on[w] && index_of[w] < low[v]) low[v] = index_of[w]
          continue
        }
        if (low[v] == index_of[v]) {
          comp = ""; size = 0
          do { w = stk[sp--]; on[w] = 0; comp = w " " comp; size++ } while (w != v)
          self = 0
          if (size == 1) { k2 = split(adj[v], s2, " "); for (j = 1; j <= k2; j++) if (s2[j] == v) self = 1 }
          if (size > 1 || self) { cycles++; printf "cycle: %s\n", comp }
        }
        cs--
        if (cs > 0) { u = cnode[cs]; if (low[v] < low[u]) low[u] = low[v] }
      }
    }
    if (!cycles) print "no cycle"
    exit cycles ? 1 : 0
  }'
