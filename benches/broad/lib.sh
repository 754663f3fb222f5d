# Shared by benches/broad/texts/*.sh (sourced): the download cache, and a pinned download
# checked by SHA-256 that is skipped when the cache already holds a good copy.
cache=${SEAMCUT_CACHE:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/target/fetch}
mkdir -p "$cache"

# fetch NAME FILE SHA256 COMMAND...: run COMMAND in the cache folder to download FILE, unless
# a copy with that checksum is there; exit with the client's output on failure.
fetch() {
    local name=$1 file=$2 sum=$3 log
    shift 3
    if [ -f "$cache/$file" ] && echo "$sum  $cache/$file" | sha256sum -c --status; then
        return 0
    fi
    rm -f "$cache/$file"
    log=$(cd "$cache" && "$@" 2>&1) || { echo "$log" >&2; exit 1; }
    echo "$sum  $cache/$file" | sha256sum -c --status || { echo "$name: checksum mismatch for $cache/$file" >&2; exit 1; }
}

# extract_deb FILE: unpack a cached .deb into a temporary folder (removed on exit) and set
# $tmp to it.
extract_deb() {
    tmp=$(mktemp -d)
    trap 'rm -rf "$tmp"' EXIT
    dpkg-deb -x "$cache/$1" "$tmp"
}
