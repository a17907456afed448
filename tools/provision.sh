#!/usr/bin/env bash
# What the tests need besides Python (docs/getting-started.md): sshd, because the SSH tests start
# their own OpenSSH servers on 127.0.0.1, Chromium, because the report's browser test
# renders report.html headless, and PostgreSQL, because the results store's tests start a
# throwaway cluster on 127.0.0.1 (docs/history.md). The checks job (tools/tox-job.sh) runs
# this first.
#
# Missing ones are installed through apt-get when run as root on a Debian/Ubuntu machine
# (apt-get update first, non-interactive, quiet); otherwise, or when that fails, it stops at
# once with one line naming what to install. Exit status: 0 all present, 1 not.
#
# A tool is found as the tests find it: on PATH, else in the folders of HIL_TOOL_DIRS
# (default /usr/sbin /usr/bin: sshd is in /usr/sbin, off a normal user's PATH). PostgreSQL's
# initdb is found in the folders of HIL_POSTGRES_BINS (default /usr/lib/postgresql/*/bin,
# where Debian keeps it, off PATH).
set -uo pipefail

tool_dirs=${HIL_TOOL_DIRS-/usr/sbin /usr/bin}
postgres_bins=${HIL_POSTGRES_BINS-/usr/lib/postgresql/*/bin}

have() {
    local found dir
    found=$(command -v "$1") && [ -x "$found" ] && return 0
    for dir in $tool_dirs; do
        [ -x "$dir/$1" ] && return 0
    done
    return 1
}

have_postgres() {
    local dir
    # shellcheck disable=SC2086  # the default is a glob
    for dir in $postgres_bins; do
        [ -x "$dir/initdb" ] && return 0
    done
    return 1
}

missing_packages() {
    local packages=()
    have sshd || packages+=(openssh-server)
    have chromium || packages+=(chromium)
    have_postgres || packages+=(postgresql)
    echo "${packages[@]}"
}

missing=$(missing_packages)
[ -z "$missing" ] && exit 0
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "npu-hil tests need $missing: install first (Debian/Ubuntu: sudo apt-get install $missing), or run as root to have it done" >&2
    exit 1
fi
echo "npu-hil tests: installing $missing (apt-get)" >&2
log=$(mktemp)
# shellcheck disable=SC2086  # one word per package
if ! { apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -qq --no-install-recommends $missing; } >"$log" 2>&1; then
    tail -n 5 "$log" >&2
    rm -f "$log"
    echo "npu-hil tests need $missing: apt-get could not install it; install first and run again" >&2
    exit 1
fi
rm -f "$log"
missing=$(missing_packages)
if [ -n "$missing" ]; then
    echo "npu-hil tests need $missing: still missing after apt-get; install first and run again" >&2
    exit 1
fi
