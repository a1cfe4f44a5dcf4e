#!/bin/sh
# The tests start their own redis-server processes and drive Debian's Chromium (the playground's
# browser test; playwright-core downloads no browser). Make sure redis-server, redis-cli and
# /usr/bin/chromium are there: on Debian or Ubuntu as root this installs what is missing (CI runs
# this same script); otherwise it says how.
set -eu
missing=''
command -v redis-server >/dev/null 2>&1 && command -v redis-cli >/dev/null 2>&1 || missing="$missing redis-server redis-tools"
[ -x /usr/bin/chromium ] || missing="$missing chromium"
[ -n "$missing" ] || exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
  echo "installing with apt-get:$missing" >&2
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # shellcheck disable=SC2086
  apt-get install -y -qq --no-install-recommends $missing >/dev/null
  # The redis package starts a system redis on 6379; the tests start their own on free ports.
  (service redis-server stop || true) >/dev/null 2>&1
  exit 0
fi
cat >&2 <<HOW
The tests need:$missing. Install them, then run the tests again:
  Debian/Ubuntu: sudo apt-get install redis-server redis-tools chromium && sudo service redis-server stop
  macOS:         brew install redis (the browser test expects Chromium at /usr/bin/chromium)
HOW
exit 1
