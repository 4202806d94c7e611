#!/usr/bin/env bash
# Refreshes the two npm packages the extension host ships with (embedded in the pi binary):
# jiti (loads TypeScript the way Pi does) and typebox (the real schema builder extensions import).
# Versions are Pi 1.6.0's. Both are MIT licensed; their license files are inside the tarballs.
set -euo pipefail
cd "$(dirname "$0")"
rm -f jiti-*.tgz typebox-*.tgz
npm pack jiti@2.7.0 typebox@1.3.27 >/dev/null
sha256sum ./*.tgz > SHA256SUMS
