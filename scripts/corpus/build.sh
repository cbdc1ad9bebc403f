#!/usr/bin/env bash
# Packs the whole corpus books from the local git mirrors into ${CORPUS_DIR:-/work/corpus}/<name>.epub.
#
# Each book is an unpacked EPUB tree in a mirror (bare git repository); it is exported with
# `git archive` and zipped as an EPUB: `mimetype` first and stored, then the rest deflated.
# The whole books are not committed; the committed extracts are under fixtures/books/<name>/
# (see their SOURCE.md). Prints each book's mirror commit, size and path, and writes the same
# lines to ${CORPUS_DIR}/MANIFEST.txt.
#
# Usage: scripts/corpus/build.sh [name...]   (no names: every book)
set -euo pipefail

MIRRORS=${MIRRORS:-/work/.mirror}
CORPUS_DIR=${CORPUS_DIR:-/work/corpus}
IDPF="$MIRRORS/IDPF+epub3-samples/repo"
SE_MOBY="$MIRRORS/standardebooks+herman-melville_moby-dick/repo"
SE_LEAVES="$MIRRORS/standardebooks+walt-whitman_leaves-of-grass/repo"

# name|mirror|tree inside the mirror
BOOKS=(
  "moby-dick-idpf|$IDPF|30/moby-dick"
  "moby-dick-se|$SE_MOBY|src"
  "leaves-of-grass-se|$SE_LEAVES|src"
  "childrens-literature|$IDPF|30/childrens-literature"
  "wasteland|$IDPF|30/wasteland"
  "accessible-epub-3|$IDPF|30/accessible_epub_3"
  "sous-le-vent|$IDPF|30/sous-le-vent"
  "page-blanche|$IDPF|30/page-blanche"
  "ghv-oeb-page|$IDPF|30/GhV-oeb-page"
  "kusamakura-japanese|$IDPF|30/kusamakura-japanese-vertical-writing"
  "regime-anticancer-arabic|$IDPF|30/regime-anticancer-arabic"
  "georgia-pls-ssml|$IDPF|30/georgia-pls-ssml"
)

command -v zip >/dev/null || { echo "zip is missing: apt-get install -y zip" >&2; exit 1; }

mkdir -p "$CORPUS_DIR"
CORPUS_DIR=$(cd "$CORPUS_DIR" && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
manifest="$CORPUS_DIR/MANIFEST.txt"
# A full run rewrites the manifest; a run for some books appends to it.
if [[ $# -eq 0 ]]; then : >"$manifest"; fi

# Writes every blob of <tree> at <commit> under <dir>. The mirrors are partial: a blob they
# lack (large media, e.g. kusamakura's SMIL audio) is left out and named on stderr.
export_tree() {
  local repo=$1 commit=$2 tree=$3 dir=$4 mode type object path
  git -C "$repo" ls-tree -r -z "$commit" -- "$tree" |
    while IFS= read -r -d '' line; do
      read -r mode type object <<<"${line%%$'\t'*}"
      path=${line#*$'\t'}
      [[ $type == blob ]] || continue
      if ! git -C "$repo" cat-file -e "$object" 2>/dev/null; then
        echo "  (the mirror lacks $path; left out)" >&2
        echo "$path" >>"$dir.missing"
        continue
      fi
      mkdir -p "$dir/$(dirname "$path")"
      git -C "$repo" cat-file blob "$object" >"$dir/$path"
    done
}

wanted=" $* "
for entry in "${BOOKS[@]}"; do
  IFS='|' read -r name repo tree <<<"$entry"
  if [[ $# -gt 0 && $wanted != *" $name "* ]]; then continue; fi
  commit=$(git -C "$repo" rev-parse HEAD)
  dir="$work/$name"
  mkdir -p "$dir"
  export_tree "$repo" "$commit" "$tree" "$dir"
  root="$dir/$tree"
  [[ -f $root/mimetype ]] || { echo "$name: no mimetype in $repo:$tree" >&2; exit 1; }
  out="$CORPUS_DIR/$name.epub"
  rm -f "$out"
  # Deterministic: fixed timestamps, sorted entries, no extra attributes.
  find "$root" -exec touch -h -d '2000-01-01 00:00:00' {} +
  (
    cd "$root"
    zip -q -X0 "$out" mimetype
    find . -type f ! -name mimetype ! -name '.*' -printf '%P\n' | LC_ALL=C sort |
      zip -q -Xr9D "$out" -@
  )
  size=$(stat -c %s "$out")
  line=$(printf '%-26s %10d bytes  %s  %s:%s' "$name" "$size" "$commit" "${repo#"$MIRRORS"/}" "$tree")
  if [[ -f $dir.missing ]]; then
    line+="  (lacks $(wc -l <"$dir.missing") file(s) the mirror does not hold: $(tr '\n' ' ' <"$dir.missing"))"
  fi
  echo "$line"
  echo "$line" >>"$manifest"
done
echo "wrote $CORPUS_DIR (manifest: $manifest)"
