#!/usr/bin/env bash
# include-graph.sh -- prints the `#include "..."` graph of the C files of one
# folder (and of its subfolders) and exits 1 when it has a cycle.
#
#   tools/include-graph.sh [-q] [-i] [-p PUBDIR] [DIR]  (DIR defaults to csrc/lua)
#   tools/include-graph.sh -s HEADER [DIR]  (lists DIR's files that include
#                                            <HEADER>, e.g. -s curl/curl.h csrc)
#
# Units, not files: a.c, a.h and a_int.h (a's internal header) count as one
# unit "a", so a.c including b.h while b.c includes a.h is a cycle. PUBDIR
# holds public headers that belong to DIR's units although they live
# elsewhere (for csrc/core and its subfolders it defaults to
# include/kinformer; "-p ''" for none): a.h there still belongs to unit a.
# Only quoted includes naming a header of DIR or PUBDIR are edges (system
# headers and other folders' headers are left out).
#
# Calls count as well: a .c file that names a function (or a global) that
# another unit's .c file defines without `static` depends on that unit,
# as if it included it, so two files that call each other are a cycle even
# when a hub header sits between them. Comments and strings are skipped;
# declarations in headers are not uses. -i counts includes only.
#
# Folders: a unit lives in the subfolder of DIR that holds its .c file (or
# else its header); a public header with no file under DIR names its folder
# with "layer: NAME" in its first comment. When DIR has subfolders, the
# graph of the folders is printed too, and a cycle between folders (a unit
# of one including a unit of another and back) is a cycle as well.
#
# Output: one line per unit, "folder/unit -> dep dep ...", sorted; then, with
# subfolders, one line per folder, "folder => dep dep ..."; then either
# "no cycle" or, for each strongly connected component of more than one
# node (or a node including itself), "cycle: a b c" (units) or
# "folder cycle: x y" (folders). -q prints only the verdict.
# Exit status: 0 no cycle, 1 a cycle, 2 usage error.
set -euo pipefail

quiet=0
calls=1
pub=unset
sys=
usage() { sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; }
while (($#)); do
  case $1 in
    -h) usage; exit 0 ;;
    -s) sys=${2-}; shift 2 ;;
    -q) quiet=1; shift ;;
    -i) calls=0; shift ;;
    -p) pub=${2-}; shift 2 ;;
    -*) echo "include-graph.sh: unknown option $1" >&2; exit 2 ;;
    *) break ;;
  esac
done
dir=${1:-csrc/lua}
dir=${dir%/}
if [[ ! -d $dir ]]; then
  echo "include-graph.sh: no folder $dir" >&2
  exit 2
fi
if [[ -n $sys ]]; then
  # The files that include a system header: one path a line, sorted.
  grep -rlE --include='*.[ch]' "^[[:space:]]*#[[:space:]]*include[[:space:]]*<${sys//./\\.}>" "$dir" | sort || true
  exit 0
fi
if [[ $pub == unset ]]; then
  case $dir in
    csrc/core | csrc/core/* | */csrc/core | */csrc/core/*) pub=$(dirname "$0")/../include/kinformer ;;
    *) pub= ;;
  esac
fi
if [[ -n $pub && ! -d $pub ]]; then
  echo "include-graph.sh: no folder $pub" >&2
  exit 2
fi

mapfile -t files < <(find "$dir" -type f \( -name '*.c' -o -name '*.h' \) | sort)
if ((${#files[@]} == 0)); then
  echo "include-graph.sh: no .c or .h file in $dir" >&2
  exit 2
fi
pubfiles=()
if [[ -n $pub ]]; then
  mapfile -t pubfiles < <(find "$pub" -maxdepth 1 -type f -name '*.h' | sort)
fi

# One line per file: "F path" for DIR's files, "P path" for PUBDIR's; awk
# reads the files themselves at the end.
{
  for f in "${files[@]}"; do echo "F $f"; done
  for f in "${pubfiles[@]}"; do echo "P $f"; done
} | awk -v quiet="$quiet" -v calls="$calls" -v debug="${INCLUDE_GRAPH_DEBUG:-0}" -v dir="$dir" '
  function unitof(base,   u) {
    u = base
    sub(/\.[^.]*$/, "", u)
    if (base ~ /\.h$/) sub(/_int$/, "", u)
    return u
  }
  function folderof(path,   rel) {
    rel = substr(path, length(dir) + 2)
    if (rel !~ /\//) return "."
    sub(/\/[^\/]*$/, "", rel)
    return rel
  }
  function base(path,   b) { b = path; sub(/.*\//, "", b); return b }
  # Tarjan strongly connected components over nodes node[1..nn] and adj[],
  # iterative over a call stack; prints each cycle with the label.
  function scc(label,   i, idx, sp, cs, v, k, w, comp, size, self, j, k2, u, found) {
    delete index_of; delete low; delete on; delete stk; delete cnode; delete cpos
    idx = 0; sp = 0; found = 0
    for (i = 1; i <= nn; i++) {
      if (node[i] in index_of) continue
      cs = 1; cnode[1] = node[i]; cpos[1] = 0
      index_of[node[i]] = low[node[i]] = ++idx; stk[++sp] = node[i]; on[node[i]] = 1
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
          if (size > 1 || self) { found++; printf "%s: %s\n", label, comp }
        }
        cs--
        if (cs > 0) { u = cnode[cs]; if (low[v] < low[u]) low[u] = low[v] }
      }
    }
    return found
  }
  # Reads path as code: text without comments, string and char literals
  # (their quotes kept empty), one string per file in code[path].
  function readcode(path,   line, out, incom, i, c, n, q) {
    out = ""; incom = 0
    while ((getline line < path) > 0) {
      n = length(line); i = 1
      while (i <= n) {
        c = substr(line, i, 1)
        if (incom) { if (substr(line, i, 2) == "*/") { incom = 0; i += 2 } else i++; continue }
        if (substr(line, i, 2) == "/*") { incom = 1; i += 2; continue }
        if (substr(line, i, 2) == "//") break
        if (c == "\"" || c == "\047") {
          q = c; out = out q; i++
          while (i <= n && substr(line, i, 1) != q) { if (substr(line, i, 1) == "\\") i++; i++ }
          out = out q; i++; continue
        }
        out = out c; i++
      }
      out = out "\n"
    }
    close(path)
    return out
  }
  # Records in def[] the names a .c file defines for other files: functions
  # and globals declared at column 0 without static (a definition ends in
  # "{" or has "="; a prototype ends in ";" and defines nothing).
  function defs(path, u,   text, nl, lines, i, st, buf, name, t) {
    text = readcode(path)
    nl = split(text, lines, "\n")
    for (i = 1; i <= nl; i++) {
      if (lines[i] !~ /^[A-Za-z_]/ || lines[i] ~ /^(typedef|extern|(struct|union|enum) [A-Za-z0-9_]+ *[;{]|[A-Za-z_][A-Za-z0-9_]*:|#)/) continue
      st = lines[i] ~ /^static/
      buf = lines[i]
      while (buf !~ /[{;][ \t]*$/ && i < nl) buf = buf " " lines[++i]
      if (buf ~ /^[^=(]*[A-Za-z_][A-Za-z0-9_]*[ \t]*\(/ && buf ~ /\{[ \t]*$/) {
        t = buf; sub(/[ \t]*\(.*/, "", t); name = t; sub(/.*[^A-Za-z0-9_]/, "", name)
      } else if (buf ~ /^[^(]*[A-Za-z_][A-Za-z0-9_]*(\[[^]]*\])?[ \t]*=/) {
        t = buf; sub(/(\[[^]]*\])?[ \t]*=.*/, "", t); name = t; sub(/.*[^A-Za-z0-9_]/, "", name)
      } else continue
      if (name == "" || name == "main") continue
      own[path, name] = 1
      if (!st) def[name] = u
    }
  }
  # Adds an edge from the unit of each .c file to the unit defining a name it uses.
  function call_edges(   i, u, text, n, toks, k, t, to) {
    for (i = 1; i <= ns; i++) if (src[i] ~ /\.c$/ && index(src[i], dir "/") == 1) defs(src[i], unitof(base(src[i])))
    for (i = 1; i <= ns; i++) {
      if (src[i] !~ /\.c$/ || index(src[i], dir "/") != 1) continue
      u = unitof(base(src[i]))
      text = readcode(src[i])
      gsub(/[^A-Za-z0-9_]+/, " ", text)
      n = split(text, toks, " ")
      for (k = 1; k <= n; k++) {
        t = toks[k]
        if (!(t in def) || ((src[i] SUBSEP t) in own)) continue
        to = def[t]
        if (debug && to != u) printf "call: %s -> %s (%s)\n", u, to, t
        if (to != u && !((u SUBSEP to) in edge)) {
          edge[u, to] = 1
          uadj[u] = uadj[u] " " to
        }
      }
    }
  }
  # The list of files, from stdin.
  {
    kind = $1; path = $2; b = base(path); u = unitof(b)
    if (kind == "F") {
      indir[u] = 1
      hdr[b] = u
      f = folderof(path)
      if (b ~ /\.c$/) cfolder[u] = f
      else if (!(u in hfolder)) hfolder[u] = f
      src[++ns] = path
    } else {
      pubpath[u] = path
      if (!(b in hdr)) hdr[b] = u
      src[++ns] = path
    }
    next
  }
  END {
    # Folders of the units; a public header-only unit reads its layer tag.
    for (i = 1; i <= ns; i++) {
      u = unitof(base(src[i]))
      if (u in seen) continue
      seen[u] = 1
      if (u in cfolder) folder[u] = cfolder[u]
      else if (u in hfolder) folder[u] = hfolder[u]
      else {
        folder[u] = "(public)"
        for (l = 0; l < 12 && (getline line < pubpath[u]) > 0; l++)
          if (match(line, /layer: [A-Za-z0-9_.-]+/)) { folder[u] = substr(line, RSTART + 7, RLENGTH - 7); break }
        close(pubpath[u])
      }
      units[++nu] = u
    }
    # Edges from every quoted include naming a header of DIR or PUBDIR.
    for (i = 1; i <= ns; i++) {
      from = unitof(base(src[i]))
      while ((getline line < src[i]) > 0) {
        if (line !~ /^[ \t]*#[ \t]*include[ \t]*"/) continue
        s = line
        sub(/^[^"]*"/, "", s); sub(/".*$/, "", s)
        if (s ~ /\//) continue
        if (!(s in hdr)) continue
        to = hdr[s]
        if (to != from && !((from SUBSEP to) in edge)) {
          edge[from, to] = 1
          uadj[from] = uadj[from] " " to
        }
      }
      close(src[i])
    }
    if (calls) call_edges()
    multi = 0
    for (i = 1; i <= nu; i++) if (folder[units[i]] != ".") multi = 1
    for (i = 1; i <= nu; i++) {
      u = units[i]
      nm[u] = (multi ? folder[u] "/" : "") u
    }
    # Units sorted by printed name (insertion sort: a few hundred at most).
    for (i = 2; i <= nu; i++) {
      x = units[i]; j = i - 1
      while (j > 0 && nm[units[j]] > nm[x]) { units[j + 1] = units[j]; j-- }
      units[j + 1] = x
    }
    delete adj; nn = 0
    for (i = 1; i <= nu; i++) {
      u = units[i]; node[++nn] = nm[u]
      k = split(uadj[u], d, " "); line = ""
      # deps sorted
      for (a = 2; a <= k; a++) { x = d[a]; b2 = a - 1; while (b2 > 0 && nm[d[b2]] > nm[x]) { d[b2 + 1] = d[b2]; b2-- } d[b2 + 1] = x }
      for (a = 1; a <= k; a++) { line = line " " nm[d[a]]; adj[nm[u]] = adj[nm[u]] " " nm[d[a]] }
      if (!quiet) printf "%s ->%s\n", nm[u], line
    }
    cycles = scc("cycle")
    if (multi) {
      # The folder graph: an arrow where some unit includes another folder s unit.
      delete adj; nn = 0
      for (i = 1; i <= nu; i++) { f = folder[units[i]]; if (!(f in fseen)) { fseen[f] = 1; fl[++nf] = f } }
      for (i = 2; i <= nf; i++) { x = fl[i]; j = i - 1; while (j > 0 && fl[j] > x) { fl[j + 1] = fl[j]; j-- } fl[j + 1] = x }
      for (i = 1; i <= nu; i++) {
        u = units[i]; k = split(uadj[u], d, " ")
        for (a = 1; a <= k; a++) {
          f = folder[u]; g = folder[d[a]]
          if (f != g && !((f SUBSEP g) in fedge)) { fedge[f, g] = 1; fcount[f, g] = 0 }
          if (f != g) fcount[f, g]++
        }
      }
      for (i = 1; i <= nf; i++) {
        node[++nn] = fl[i]; line = ""
        for (j = 1; j <= nf; j++)
          if ((fl[i] SUBSEP fl[j]) in fedge) { adj[fl[i]] = adj[fl[i]] " " fl[j]; line = line " " fl[j] "(" fcount[fl[i], fl[j]] ")" }
        if (!quiet) printf "%s =>%s\n", fl[i], line
      }
      cycles += scc("folder cycle")
    }
    if (!cycles) print "no cycle"
    exit cycles ? 1 : 0
  }'
